import type { BusNames, DeadLetter, DeadLetters } from "@mq9/agent/internal";
import {
  type Envelope,
  EnvelopeError,
  loopViolation,
  preciseNow,
  readEnvelope,
  SeenMessages,
  type SendEnvelopeOptions,
  sendEnvelope,
} from "@mq9/agent/internal";
import { type ConsumedMessage, type Consumer, type Mq9Client, Mq9Error } from "@mq9/client";
import { Defaults } from "@mq9/protocol";
import { OrchestratorDefaults } from "../defaults.js";
import type { AgentDirectory } from "./agent-directory.js";
import { type AgentView, isAlive } from "./agent-view.js";
import { chooseForCapability } from "./capability-choice.js";
import { TraceLedger } from "./trace-ledger.js";

/** How a message found its agent (or agents, for a broadcast). */
export type RouteLayer = "explicit" | "capability" | "intent" | "broadcast";

/**
 * Why nobody took a message. `unavailable`: nobody who could take it is live right now (the
 * scheduler waits for one); `at_capacity`: every candidate is at the per-agent limit (it
 * waits too); the loop guards: `max_hops`, `cycle`, `trace_budget`, `duplicate`, `bounce`;
 * `no_match`: intent routing found nobody above its threshold; `no_route`: nothing to route by.
 */
export type DeadKind =
  | "unavailable"
  | "at_capacity"
  | "max_hops"
  | "cycle"
  | "trace_budget"
  | "duplicate"
  | "bounce"
  | "no_match"
  | "no_route"
  | "malformed";

/** The loop guards' kinds: each stop is logged, counted and raised as a `loop_detected` webhook. */
export const LOOP_KINDS: ReadonlySet<DeadKind> = new Set([
  "max_hops",
  "cycle",
  "trace_budget",
  "duplicate",
  "bounce",
]);

export type RouteDecision = { agent: AgentView; layer: RouteLayer } | { reason: string; kind: DeadKind };

/** What became of a message handed to the router. */
export type Delivery =
  | { delivered: true; agent: AgentView; layer: RouteLayer; envelope: Envelope; copies?: number }
  | { delivered: false; deadLetter: DeadLetter; kind: DeadKind };

export interface RouterOptions {
  /** Least calibrated DISCOVER score (0..1) a semantic match needs when the registry reports scores (default Defaults.intentMinScore). */
  intentThreshold?: number;
  /** Messages one trace may route before the rest are dead-lettered (default 1 000). */
  traceBudget?: number;
  /** Seconds a delivered message is kept in the agent's mailbox (default 7 days). */
  messageTtlSeconds?: number;
  now?: () => number;
  /** Lease of fetched messages: one fetched by a router that stopped comes back after it (default 5 000). */
  leaseMs?: number;
  /** Messages per FETCH of the router mailbox (default 256). */
  batch?: number;
  /** Longest wait of one FETCH of the router mailbox when it is empty (default 2 000). */
  pollTimeoutMs?: number;
  /**
   * Concurrent deliveries of the router mailbox's consumer (default 1 024). Each delivery waits
   * for its SEND to be stored, so this bounds the router's rate at concurrency / SEND latency;
   * above the FETCH batch, the next FETCH goes out while the last batch's SENDs are in flight.
   */
  concurrency?: number;
  /** Work in progress one agent may have before the router passes it over (0 = no limit, the default). */
  agentConcurrency?: number;
  /** Every dead letter, with its kind (metrics, logs, webhooks). */
  onDeadLetter?: (letter: DeadLetter, kind: DeadKind) => void;
  /** Every message delivered (metrics, sampled logs). */
  onRouted?: (layer: RouteLayer, envelope: Envelope, agent: AgentView) => void;
  onError?: (error: Error) => void;
}

/** The text an intent is read from: `intent`, else a string payload, else the payload's `text`. */
function intentText(envelope: Envelope): string | undefined {
  if (envelope.intent) return envelope.intent;
  if (typeof envelope.payload === "string") return envelope.payload;
  const text = (envelope.payload as { text?: unknown } | null)?.text;
  return typeof text === "string" && text.trim() !== "" ? text : undefined;
}

/** The similarity the registry put on a semantic hit (broker-added fields start with `_`), if any. */
function scoreOf(entry: Record<string, unknown>): number | undefined {
  return typeof entry._score === "number" ? entry._score : undefined;
}

/** Keeps the last N latencies (ms) of a measurement for percentiles. */
export class LatencySample {
  private readonly values: Float64Array;
  private next = 0;
  private filled = 0;

  constructor(size = 100_000) {
    this.values = new Float64Array(size);
  }

  add(ms: number): void {
    this.values[this.next] = ms;
    this.next = (this.next + 1) % this.values.length;
    this.filled = Math.min(this.filled + 1, this.values.length);
  }

  get count(): number {
    return this.filled;
  }

  /** Nearest-rank percentile of what is kept; NaN when empty. */
  percentile(p: number): number {
    if (this.filled === 0) return Number.NaN;
    const sorted = this.values.slice(0, this.filled).sort();
    return sorted[Math.min(this.filled - 1, Math.max(0, Math.ceil((p / 100) * this.filled) - 1))];
  }

  clear(): void {
    this.next = 0;
    this.filled = 0;
  }
}

/**
 * Decides who takes a message, in three layers: an explicit target; a capability,
 * chosen by weight and reported load among live agents; an intent, matched by
 * meaning through the registry's semantic DISCOVER. Loop guards (max_hops, cycles
 * on the trace path, a per-trace budget) run first; whatever cannot be delivered
 * goes to the dead-letter mailbox with the reason.
 */
export class Router {
  /** Time from a message's `sent_at` to the router taking it from its mailbox. */
  readonly hopLatency = new LatencySample();
  private readonly ledger: TraceLedger;
  private readonly threshold: number;
  private readonly now: () => number;
  /** Hops of the last message delivered to an agent in a trace: what it sends next in that trace is further. */
  /** msg_ids taken from the router mailbox (a re-sent one is a duplicate). */
  private readonly seen = new SeenMessages(200_000);
  /** Messages already answered through the router (a second answer is a bouncing result). */
  private readonly answeredOnce = new SeenMessages(200_000);
  private readonly messageTtlS: number;
  private consumer?: Consumer;
  private routedCount = 0;
  private deadCount = 0;

  constructor(
    private readonly client: Mq9Client,
    private readonly names: BusNames,
    private readonly directory: AgentDirectory,
    private readonly deadLetters: DeadLetters,
    private readonly options: RouterOptions = {},
  ) {
    this.ledger = new TraceLedger(options.traceBudget ?? OrchestratorDefaults.traceBudget);
    this.threshold = options.intentThreshold ?? Defaults.intentMinScore;
    this.now = options.now ?? Date.now;
    this.messageTtlS = options.messageTtlSeconds ?? OrchestratorDefaults.messageTtlSeconds;
  }

  /** Messages delivered and dead-lettered so far. */
  get stats(): { routed: number; dead: number } {
    return { routed: this.routedCount, dead: this.deadCount };
  }

  /** Starts delivering what agents put in the router mailbox. */
  listen(): void {
    const batch = this.options.batch ?? OrchestratorDefaults.pollBatch;
    const concurrency = this.options.concurrency ?? OrchestratorDefaults.routerConcurrency;
    this.consumer = this.client.consume(this.names.router, (m) => this.take(m), {
      group: "router",
      deliver: "earliest",
      batch,
      maxWaitMs: this.options.pollTimeoutMs ?? OrchestratorDefaults.pollTimeoutMs,
      concurrency,
      // A FETCH waits until the broker has stored every SEND before it; under load that wait,
      // not the routing, set the router's pace with one FETCH at a time. A second one only
      // where both batches find handler slots: messages waiting for a slot sit out their lease.
      fetches: concurrency >= 2 * batch ? 2 : 1,
      leaseMs: this.options.leaseMs ?? 5_000,
      // The envelope is the JSON payload; the headers only mirror it for plain mq9 tools.
      headerBytes: false,
      headerMap: false,
      onError: (error) => this.options.onError?.(error),
    });
  }

  async close(): Promise<void> {
    await this.consumer?.stop();
  }

  /** Counts a dispatch of the scheduler (its answer is reported with `answered`). */
  noteSent(agentName: string, traceId?: string, hops = 0): void {
    this.directory.noteSent(agentName, true);
    if (traceId !== undefined) this.ledger.delivered(traceId, agentName, hops);
    this.routedCount++;
  }

  /**
   * A dispatch of the scheduler ended after `elapsedMs`, with `ahead` messages in progress at
   * the agent when it was sent: its agent has that much less work in progress, and its
   * service time estimate learns from it.
   */
  answered(agentName: string, elapsedMs?: number, ahead = 0): void {
    this.directory.answered(agentName, elapsedMs, ahead);
  }

  /** An agent's work in progress now (0 when unknown). */
  loadOf(agentName: string): number {
    return this.directory.get(agentName)?.load ?? 0;
  }

  /** Whether someone could take work for this performer now (no registry read: it is asked often). */
  couldTake(performer: { agent: string } | { capability: string }): boolean {
    if ("agent" in performer) return this.directory.get(performer.agent) !== undefined;
    const limit = this.options.agentConcurrency ?? OrchestratorDefaults.agentConcurrency;
    return this.directory
      .withCapability(performer.capability)
      .some((a) => this.directory.isAlive(a) && (limit <= 0 || a.load < limit));
  }

  /** A message routed by someone else (the scheduler's dispatches), told to the same hook. */
  noteRouted(layer: RouteLayer, envelope: Envelope, agent: AgentView): void {
    this.options.onRouted?.(layer, envelope, agent);
  }

  /** A dead letter put by someone else (the scheduler), told to the same hooks as the router's own. */
  reportDead(letter: DeadLetter, kind: DeadKind): void {
    this.deadCount++;
    this.options.onDeadLetter?.(letter, kind);
  }

  /** Forgets a finished trace's budget. */
  forgetTrace(traceId: string): void {
    this.ledger.forgetBudget(traceId);
  }

  /**
   * Picks the agent for a message, or says why there is none. Loop guards included.
   * `fallback`: try intent routing when explicit and capability routing find nobody
   * (the scheduler's steps name what they need, so they wait for it instead).
   */
  async decide(envelope: Envelope, options: { fallback?: boolean } = {}): Promise<RouteDecision> {
    if (this.overBudget(envelope)) return this.budgetExhausted();
    if (envelope.hops >= envelope.max_hops) {
      return { reason: `max_hops exhausted (${envelope.hops} of ${envelope.max_hops})`, kind: "max_hops" };
    }
    const decision = await this.choose(envelope, options.fallback ?? true);
    if ("reason" in decision) return decision;
    const violation = loopViolation(envelope, decision.agent.name);
    if (violation) return { reason: violation, kind: violation.startsWith("cycle") ? "cycle" : "max_hops" };
    // Checked again: messages of one trace routed at once all passed the first check while
    // choosing (an await), and only the budget's spend is in order.
    if (this.overBudget(envelope)) return this.budgetExhausted();
    this.ledger.spend(envelope.trace_id);
    return decision;
  }

  private overBudget(envelope: Envelope): boolean {
    return this.ledger.used(envelope.trace_id) >= this.ledger.perTrace;
  }

  private budgetExhausted(): RouteDecision {
    return {
      reason: `trace budget exhausted (${this.ledger.perTrace} messages per trace)`,
      kind: "trace_budget",
    };
  }

  /** Routes and sends a message; undeliverable ones go to the dead-letter mailbox. */
  async deliver(envelope: Envelope, options: SendEnvelopeOptions = {}): Promise<Delivery> {
    if (envelope.broadcast) return this.broadcast(envelope, options);
    const decision = await this.decide(envelope);
    if ("reason" in decision) return this.dead(envelope, decision.reason, decision.kind);
    const sent = await sendEnvelope(this.client, decision.agent.mailbox, envelope, {
      ttl: options.ttl ?? this.messageTtlS,
      key: options.key,
      target: decision.agent.name,
    });
    this.delivered(decision.agent, sent, decision.layer);
    return { delivered: true, agent: decision.agent, layer: decision.layer, envelope: sent };
  }

  private delivered(agent: AgentView, envelope: Envelope, layer: RouteLayer): void {
    this.directory.noteSent(agent.name);
    this.ledger.delivered(envelope.trace_id, agent.name, envelope.hops);
    this.routedCount++;
    this.options.onRouted?.(layer, envelope, agent);
  }

  private async dead(envelope: Envelope, reason: string, kind: DeadKind): Promise<Delivery> {
    this.deadCount++;
    const deadLetter = await this.deadLetters.put(reason, { envelope });
    this.options.onDeadLetter?.(deadLetter, kind);
    return { delivered: false, deadLetter, kind };
  }

  /**
   * `broadcast: true`: a copy to every live orchestrated agent (with the capability, when one
   * is given) except the sender, each with its own msg_id (`<msg_id>.<n>`) so that replies,
   * keyed by the msg_id they answer, do not replace each other.
   */
  private async broadcast(envelope: Envelope, options: SendEnvelopeOptions): Promise<Delivery> {
    if (envelope.hops >= envelope.max_hops) {
      return this.dead(envelope, `max_hops exhausted (${envelope.hops} of ${envelope.max_hops})`, "max_hops");
    }
    const now = this.now();
    const targets = this.directory
      .routable()
      .filter(
        (a) =>
          a.name !== envelope.source &&
          isAlive(a, now) &&
          (envelope.capability === undefined || a.capabilities.includes(envelope.capability)),
      );
    if (targets.length === 0) {
      const what = envelope.capability ? ` with capability '${envelope.capability}'` : "";
      return this.dead(envelope, `broadcast: no live agent${what}`, "unavailable");
    }
    let first: Envelope | undefined;
    await Promise.all(
      targets.map(async (agent, i) => {
        const copy = { ...envelope, msg_id: `${envelope.msg_id}.${i + 1}`, target: agent.name };
        const sent = await sendEnvelope(this.client, agent.mailbox, copy, {
          ttl: options.ttl ?? this.messageTtlS,
          target: agent.name,
        });
        if (i === 0) first = sent;
        this.delivered(agent, sent, "broadcast");
      }),
    );
    return {
      delivered: true,
      agent: targets[0],
      layer: "broadcast",
      envelope: first!,
      copies: targets.length,
    };
  }

  private async choose(envelope: Envelope, fallback: boolean): Promise<RouteDecision> {
    let missed: { reason: string; kind: DeadKind } | undefined;
    if (envelope.target !== "*") {
      const named = await this.explicit(envelope.target);
      if ("agent" in named || (!envelope.capability && !fallback)) return named;
      missed = named as { reason: string; kind: DeadKind };
    }
    if (envelope.capability) {
      const found = await this.byCapability(envelope);
      if ("agent" in found || !fallback || found.kind === "cycle") return found;
      missed = found as { reason: string; kind: DeadKind };
    }
    const text = fallback ? intentText(envelope) : undefined;
    if (text !== undefined) {
      const matched = await this.byIntent(envelope, text);
      if ("agent" in matched || !missed) return matched;
      return { reason: `${missed.reason}; intent fallback: ${matched.reason}`, kind: missed.kind };
    }
    return (
      missed ?? {
        reason: "target '*' needs a capability or an intent (text) to route by",
        kind: "no_route",
      }
    );
  }

  private async explicit(name: string): Promise<RouteDecision> {
    let agent = this.directory.get(name);
    if (!agent) {
      await this.directory.refresh({ full: true });
      agent = this.directory.get(name);
    }
    // A known agent gets its mail even while offline: its mailbox keeps it.
    if (agent) return { agent, layer: "explicit" };
    return { reason: `unknown agent '${name}': it is not in the registry`, kind: "unavailable" };
  }

  private async byCapability(envelope: Envelope): Promise<RouteDecision> {
    const capability = envelope.capability!;
    const onPath = (a: AgentView) => envelope.path.includes(a.name);
    const pick = () => {
      const candidates = this.directory.withCapability(capability);
      // A query must not go back to an agent already on its path; another agent may take it.
      const allowed =
        envelope.msg_type === "query" && candidates.some(onPath)
          ? candidates.filter((a) => !onPath(a))
          : candidates;
      return chooseForCapability(
        allowed,
        capability,
        this.now(),
        this.options.agentConcurrency ?? OrchestratorDefaults.agentConcurrency,
      );
    };
    let agent = pick();
    if (!agent) {
      // Maybe it registered since the last read.
      await this.directory.refresh();
      agent = pick();
    }
    if (agent) return { agent, layer: "capability" };
    const looping = this.directory.withCapability(capability).filter(onPath);
    if (looping.length > 0 && envelope.msg_type === "query") {
      return { reason: `cycle: ${[...envelope.path, looping[0].name].join(" -> ")}`, kind: "cycle" };
    }
    const limit = this.options.agentConcurrency ?? OrchestratorDefaults.agentConcurrency;
    if (limit > 0 && this.directory.withCapability(capability).some((a) => this.directory.isAlive(a))) {
      return {
        reason: `every live agent with capability '${capability}' has ${limit} messages in progress (the per-agent limit)`,
        kind: "at_capacity",
      };
    }
    return { reason: `no live agent has capability '${capability}'`, kind: "unavailable" };
  }

  private async byIntent(envelope: Envelope, text: string): Promise<RouteDecision> {
    let hits: Record<string, unknown>[];
    try {
      hits = await this.client.discover({ semantic: text, limit: 10, include_score: true });
    } catch (err) {
      // A busy or unreachable broker: the message stays un-ACKed and comes back after its lease.
      if (err instanceof Mq9Error && (err.code === "TIMEOUT" || err.code === "NOT_CONNECTED")) throw err;
      return { reason: `intent routing failed: ${(err as Error).message}`, kind: "no_match" };
    }
    let best: string | undefined;
    for (const hit of hits) {
      const name = typeof hit.name === "string" ? hit.name : undefined;
      if (!name) continue;
      const agent = this.directory.get(name);
      if (!agent?.orchestrated || !this.directory.isAlive(agent)) continue;
      if (envelope.msg_type === "query" && envelope.path.includes(name)) continue;
      const score = scoreOf(hit);
      if (score !== undefined && score < this.threshold) {
        best ??= `${name} at ${score.toFixed(2)}`;
        continue;
      }
      return { agent, layer: "intent" };
    }
    const detail = best ? `; the closest was ${best}, below the threshold ${this.threshold}` : "";
    return { reason: `no live agent matches the intent '${text.slice(0, 80)}'${detail}`, kind: "no_match" };
  }

  private async take(delivery: ConsumedMessage): Promise<void> {
    let envelope: Envelope;
    try {
      envelope = readEnvelope(delivery);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      this.deadCount++;
      const letter = await this.deadLetters.put(`malformed envelope: ${err.message}`, {
        raw: delivery.text(),
      });
      this.options.onDeadLetter?.(letter, "malformed");
      return;
    }
    if (envelope.sent_at !== undefined) this.hopLatency.add(Math.max(0, preciseNow() - envelope.sent_at));
    // The same message handed in again (a sender's retry, a redelivery) is not routed twice.
    if (!this.seen.firstTime(envelope.msg_id)) {
      await this.dead(envelope, `duplicate: msg_id ${envelope.msg_id} was routed before`, "duplicate");
      return;
    }
    const bounce = this.bounced(envelope);
    if (bounce) {
      await this.dead(envelope, bounce, "bounce");
      return;
    }
    // Hops carry across the messages of one trace: what an agent sends after it received a
    // message at hop h is at least hop h + 1, even when it built a new message (send()).
    const before = this.ledger.hopsDelivered(envelope.trace_id, envelope.source);
    if (before !== undefined && envelope.hops <= before) envelope.hops = before + 1;
    try {
      await this.deliver(envelope);
    } catch (err) {
      // Not delivered: it comes back after its lease, and must not count as a duplicate then.
      this.seen.forget(envelope.msg_id);
      throw err;
    }
  }

  /**
   * A result or error answers one message and goes back to whoever asked: routed by
   * capability, answering nothing, or answering a message already answered, it is a result
   * going round, stopped at once instead of after max_hops.
   */
  private bounced(envelope: Envelope): string | undefined {
    if (envelope.msg_type !== "result" && envelope.msg_type !== "error") return undefined;
    const loop = `${envelope.path.join(" -> ")} -> ${envelope.target}`;
    if (envelope.target === "*") {
      return `bounce: a ${envelope.msg_type} goes back to whoever asked, it is not routed by capability (${loop})`;
    }
    if (!envelope.in_reply_to)
      return `bounce: a ${envelope.msg_type} must answer a message (in_reply_to) (${loop})`;
    if (!this.answeredOnce.firstTime(`${envelope.in_reply_to} ${envelope.target}`)) {
      return `bounce: message ${envelope.in_reply_to} was answered to ${envelope.target} already (${loop})`;
    }
    return undefined;
  }
}
