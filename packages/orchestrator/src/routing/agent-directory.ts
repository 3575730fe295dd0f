import { type ManifestRecord, ORCHESTRATED_TAG } from "@mq9/agent/internal";
import type { AgentEntry, Mq9Client } from "@mq9/client";
import { agentInfoOf } from "@mq9/client";
import { OrchestratorDefaults } from "../defaults.js";
import { type AgentView, isAlive } from "./agent-view.js";

export interface AgentDirectoryOptions {
  /** How often the orchestrated agents are read again (default 1 000). */
  refreshMs?: number;
  /** How often every agent of the registry is read again (default 30 000). */
  fullRefreshMs?: number;
  /** Told once when an agent that was alive stops heartbeating or leaves the registry. */
  onDeath?: (agent: AgentView) => void;
  /** Failed refreshes; the directory keeps its last view. */
  onError?: (error: Error) => void;
  /** After every read of the registry (agents may have come back). */
  onRefresh?: () => void;
  now?: () => number;
}

/** An agent as the orchestrator sees it: the router's view plus whether it speaks envelopes. */
export interface DirectoryEntry extends AgentView {
  /** Registered by the Agent SDK (it has a manifest), so the router may send it work. */
  orchestrated: boolean;
  alive: boolean;
  /** Work the orchestrator dispatched to it and has not seen answered (counted into `load`). */
  inFlight: number;
  /**
   * Messages the router delivered to it since its last heartbeat (counted into `load`): their
   * answers go to whoever asked, not through the orchestrator, so the heartbeat closes them.
   */
  sentSinceReport: number;
  /** Handlers running, as its last heartbeat said. */
  reportedLoad: number;
  /** Tracked dispatches answered since that heartbeat (a heartbeat may have counted them). */
  answeredSinceReport: number;
}

const PAGE = 1_000;

/** How long an agent that left the registry is still listed, as dead. */
const FORGET_AFTER_MS = 10 * 60_000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function manifestOf(entry: AgentEntry): ManifestRecord | undefined {
  const m = entry.agent_manifest;
  if (!isObject(m) || !Array.isArray(m.capabilities)) return undefined;
  return {
    capabilities: m.capabilities.filter((c): c is string => typeof c === "string"),
    weight: typeof m.weight === "number" && m.weight > 0 ? m.weight : 1,
    max_concurrency:
      typeof m.max_concurrency === "number" && m.max_concurrency >= 1 ? Math.floor(m.max_concurrency) : 1,
    heartbeat_ms: typeof m.heartbeat_ms === "number" ? m.heartbeat_ms : 0,
  };
}

/**
 * Work in progress: what the orchestrator dispatched and has not seen answered, plus what
 * the router delivered since the agent's last heartbeat, plus what the heartbeat said was
 * running beyond the orchestrator's own work then (work someone else gave it): a report
 * that still counts work answered since is not counted twice.
 */
function loadOf(entry: DirectoryEntry): number {
  const others = Math.max(0, entry.reportedLoad - entry.inFlight - entry.answeredSinceReport);
  return entry.inFlight + entry.sentSinceReport + others;
}

function describe(entry: AgentEntry): string {
  for (const candidate of [entry.description, entry.payload]) {
    if (typeof candidate === "string" && candidate !== "") return candidate;
  }
  return agentInfoOf(entry);
}

/**
 * The registry as the router needs it: every agent with its manifest, the load of its
 * last heartbeat and whether it is alive. Refreshed from DISCOVER on an interval, so it
 * works against any mq9 broker with a registry.
 */
export class AgentDirectory {
  private readonly agents = new Map<string, DirectoryEntry>();
  private readonly lastSeenMark = new Map<string, number>();
  private readonly deadNotified = new Set<string>();
  /** Agents carrying the orchestrated tag: the only ones a read of just the tagged agents speaks for. */
  private readonly tagged = new Set<string>();
  /** Routable agents by capability, rebuilt at each refresh (the router asks once per message). */
  private byCapability = new Map<string, DirectoryEntry[]>();
  private readonly refreshMs: number;
  private readonly fullRefreshMs: number;
  private lastFullReadMs = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;
  private timer?: NodeJS.Timeout;
  private refreshing?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly client: Mq9Client,
    private readonly options: AgentDirectoryOptions = {},
  ) {
    this.refreshMs = options.refreshMs ?? OrchestratorDefaults.directoryRefreshMs;
    this.fullRefreshMs = options.fullRefreshMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  /** Reads the registry once and keeps reading it every `refreshMs`. */
  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.refreshing ?? Promise.resolve();
  }

  /** Reads the registry now (every agent when `full`); concurrent callers share one read. */
  refresh(options: { full?: boolean } = {}): Promise<void> {
    if (options.full) this.lastFullReadMs = Number.NEGATIVE_INFINITY;
    this.refreshing ??= this.read().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** Every known agent, with liveness as of now, by name. */
  list(): DirectoryEntry[] {
    const now = this.now();
    return [...this.agents.values()]
      .map((a) => ({ ...a, alive: isAlive(a, now) && a.alive }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Agents the router may choose from: orchestrated ones, with their current load. */
  routable(): AgentView[] {
    return [...this.agents.values()].filter((a) => a.orchestrated && a.alive);
  }

  /**
   * The routable agents declaring a capability, as of the last refresh; their load is
   * live (counted by noteSent) and liveness is still for the caller to check against now.
   */
  withCapability(capability: string): readonly DirectoryEntry[] {
    return this.byCapability.get(capability) ?? [];
  }

  get(name: string): DirectoryEntry | undefined {
    return this.agents.get(name);
  }

  isAlive(agent: AgentView): boolean {
    const entry = this.agents.get(agent.name);
    return entry?.alive === true && isAlive(entry, this.now());
  }

  /**
   * Counts a message sent to an agent into its work in progress: until its answer when
   * `answered` will be called for it (the scheduler's dispatches), else until its next heartbeat.
   */
  noteSent(name: string, tracked = false): void {
    const entry = this.agents.get(name);
    if (!entry) return;
    if (tracked) entry.inFlight++;
    else entry.sentSinceReport++;
    entry.load = loadOf(entry);
  }

  /**
   * A tracked dispatch ended (answered, timed out or canceled) after `elapsedMs`, sent when
   * `ahead` messages were in progress there. The time one message takes the agent, its
   * service time, is that time over the rounds of max_concurrency it waited: a backlog of a
   * fast agent does not make it look slow.
   */
  answered(name: string, elapsedMs?: number, ahead = 0): void {
    const entry = this.agents.get(name);
    if (!entry) return;
    if (elapsedMs !== undefined && elapsedMs >= 0) {
      const sample = elapsedMs / (Math.floor(ahead / Math.max(1, entry.maxConcurrency)) + 1);
      entry.serviceMs = entry.serviceMs === undefined ? sample : entry.serviceMs * 0.8 + sample * 0.2;
    }
    entry.inFlight = Math.max(0, entry.inFlight - 1);
    entry.answeredSinceReport++;
    entry.load = loadOf(entry);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.refresh().finally(() => this.schedule());
    }, this.refreshMs);
    this.timer.unref?.();
  }

  private async read(): Promise<void> {
    const entries: AgentEntry[] = [];
    const startedMs = this.now();
    const full = startedMs - this.lastFullReadMs >= this.fullRefreshMs;
    const filter = full ? {} : { tags: [ORCHESTRATED_TAG] };
    try {
      for (let page = 1; ; page++) {
        const batch = await this.client.discover({ ...filter, include_status: true, limit: PAGE, page });
        entries.push(...batch);
        if (batch.length < PAGE) break;
      }
    } catch (err) {
      this.options.onError?.(err as Error);
      return;
    }
    if (full) this.lastFullReadMs = startedMs;
    const now = this.now();
    const present = new Set<string>();
    for (const entry of entries) {
      if (typeof entry.name !== "string" || typeof entry.mailbox !== "string") continue;
      present.add(entry.name);
      this.upsert(entry, now);
    }
    for (const [name, agent] of this.agents) {
      if (present.has(name)) continue;
      // A read of the tagged agents says nothing of the others (a manifest without the tag, say).
      if (!full && !this.tagged.has(name)) continue;
      // Unregistered or purged after its ttl: dead, listed for a while, then forgotten.
      agent.alive = false;
      if (now - agent.lastSeenMs > FORGET_AFTER_MS) {
        this.agents.delete(name);
        this.lastSeenMark.delete(name);
        this.deadNotified.delete(name);
        this.tagged.delete(name);
      }
    }
    this.indexCapabilities();
    for (const agent of this.agents.values()) {
      const alive = agent.alive && isAlive(agent, now);
      if (!alive && agent.orchestrated && !this.deadNotified.has(agent.name)) {
        this.deadNotified.add(agent.name);
        this.options.onDeath?.({ ...agent, alive: false } as DirectoryEntry);
      }
      if (alive) this.deadNotified.delete(agent.name);
    }
    this.options.onRefresh?.();
  }

  private indexCapabilities(): void {
    const index = new Map<string, DirectoryEntry[]>();
    for (const agent of this.agents.values()) {
      if (!agent.orchestrated || !agent.alive) continue;
      for (const capability of agent.capabilities) {
        const list = index.get(capability);
        if (list) list.push(agent);
        else index.set(capability, [agent]);
      }
    }
    this.byCapability = index;
  }

  private upsert(entry: AgentEntry, now: number): void {
    const name = entry.name as string;
    const manifest = manifestOf(entry);
    const status = isObject(entry._status) ? entry._status : {};
    const reportedLoad = typeof status.load === "number" && status.load >= 0 ? status.load : 0;
    // _last_seen is in whole seconds; the end of that second errs on the side of alive.
    const lastSeenS = typeof entry._last_seen === "number" ? entry._last_seen : now / 1000;
    const lastSeenMs = Math.min(now, Math.floor(lastSeenS) * 1000 + 999);
    const ttlS = typeof entry.ttl === "number" && entry.ttl > 0 ? entry.ttl : 0;
    const previous = this.agents.get(name);
    const reported = this.lastSeenMark.get(name) !== lastSeenS;
    this.lastSeenMark.set(name, lastSeenS);
    const sentSinceReport = reported ? 0 : (previous?.sentSinceReport ?? 0);
    const tags = Array.isArray(entry.tags)
      ? entry.tags.filter((t): t is string => typeof t === "string")
      : [];
    if (tags.includes(ORCHESTRATED_TAG)) this.tagged.add(name);
    else this.tagged.delete(name);
    const inFlight = previous?.inFlight ?? 0;
    const answeredSinceReport = reported ? 0 : (previous?.answeredSinceReport ?? 0);
    const seen: DirectoryEntry = {
      name,
      mailbox: entry.mailbox as string,
      capabilities: manifest?.capabilities ?? [],
      description: describe(entry),
      tags,
      weight: manifest?.weight ?? 1,
      maxConcurrency: manifest?.max_concurrency ?? 1,
      reportedLoad,
      sentSinceReport,
      inFlight,
      answeredSinceReport,
      load: 0,
      credit: previous?.credit,
      serviceMs: previous?.serviceMs,
      lastSeenMs,
      ttlSeconds: ttlS,
      orchestrated: manifest !== undefined,
      alive: true,
    };
    seen.load = loadOf(seen);
    this.agents.set(name, seen);
  }
}
