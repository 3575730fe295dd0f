import type { ConsumedMessage, Consumer, Mq9Client } from "@mq9/client";
import { Defaults } from "@mq9/protocol";
import { type Envelope, EnvelopeError } from "../bus/envelope.js";
import { preciseNow, readEnvelope, type SendEnvelopeOptions, sendEnvelope } from "../bus/envelope-io.js";
import { loopViolation, TraceBudget } from "../bus/loop-guard.js";
import type { BusNames } from "../bus/names.js";
import type { AgentDirectory } from "./agent-directory.js";
import type { AgentView } from "./agent-view.js";
import { chooseForCapability } from "./capability-choice.js";
import type { DeadLetter, DeadLetters } from "./dead-letters.js";

/** How a message found its agent. */
export type RouteLayer = "explicit" | "capability" | "intent";

export type RouteDecision = { agent: AgentView; layer: RouteLayer } | { reason: string };

/** What became of a message handed to the router. */
export type Delivery =
  | { delivered: true; agent: AgentView; layer: RouteLayer; envelope: Envelope }
  | { delivered: false; deadLetter: DeadLetter };

export interface RouterOptions {
  /** Least calibrated DISCOVER score (0..1) a semantic match needs when the registry reports scores (default Defaults.intentMinScore). */
  intentThreshold?: number;
  /** Messages one trace may route before the rest are dead-lettered (default 1 000). */
  traceBudget?: number;
  /** Seconds a delivered message is kept in the agent's mailbox (default 7 days). */
  messageTtlSeconds?: number;
  /** Routing randomness (weighted choice); a seeded function makes tests repeatable. */
  random?: () => number;
  now?: () => number;
  /** Lease of fetched messages: one fetched by a router that stopped comes back after it (default 5 000). */
  leaseMs?: number;
  /** Messages per FETCH of the router mailbox (default 256). */
  batch?: number;
  /** Concurrent deliveries of the router mailbox's consumer (default 256). */
  concurrency?: number;
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
  private readonly budget: TraceBudget;
  private readonly threshold: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly ttl: number;
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
    this.budget = new TraceBudget(options.traceBudget ?? 1_000);
    this.threshold = options.intentThreshold ?? Defaults.intentMinScore;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.ttl = options.messageTtlSeconds ?? 7 * 86_400;
  }

  /** Messages delivered and dead-lettered so far. */
  get stats(): { routed: number; dead: number } {
    return { routed: this.routedCount, dead: this.deadCount };
  }

  /** Starts delivering what agents put in the router mailbox. */
  listen(): void {
    this.consumer = this.client.consume(this.names.router, (m) => this.take(m), {
      group: "router",
      deliver: "earliest",
      batch: this.options.batch ?? 256,
      concurrency: this.options.concurrency ?? 256,
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

  /** Counts a message sent to an agent outside `deliver` (the scheduler's dispatches). */
  noteSent(agentName: string): void {
    this.directory.noteSent(agentName);
    this.routedCount++;
  }

  /** Forgets a finished trace's budget. */
  forgetTrace(traceId: string): void {
    this.budget.forget(traceId);
  }

  /** Picks the agent for a message, or says why there is none. Loop guards included. */
  async decide(envelope: Envelope): Promise<RouteDecision> {
    if (!this.budget.spend(envelope.trace_id)) {
      return { reason: `trace budget exhausted (${this.budget.perTrace} messages per trace)` };
    }
    if (envelope.hops >= envelope.max_hops) {
      return { reason: `max_hops exhausted (${envelope.hops} of ${envelope.max_hops})` };
    }
    const decision = await this.choose(envelope);
    if ("reason" in decision) return decision;
    const violation = loopViolation(envelope, decision.agent.name);
    return violation ? { reason: violation } : decision;
  }

  /** Routes and sends a message; undeliverable ones go to the dead-letter mailbox. */
  async deliver(envelope: Envelope, options: SendEnvelopeOptions = {}): Promise<Delivery> {
    const decision = await this.decide(envelope);
    if ("reason" in decision) {
      this.deadCount++;
      return { delivered: false, deadLetter: await this.deadLetters.put(decision.reason, { envelope }) };
    }
    const sent = await sendEnvelope(this.client, decision.agent.mailbox, envelope, {
      ttl: options.ttl ?? this.ttl,
      key: options.key,
      target: decision.agent.name,
    });
    this.directory.noteSent(decision.agent.name);
    this.routedCount++;
    return { delivered: true, agent: decision.agent, layer: decision.layer, envelope: sent };
  }

  private async choose(envelope: Envelope): Promise<RouteDecision> {
    if (envelope.target !== "*") return this.explicit(envelope.target);
    if (envelope.capability) return this.byCapability(envelope);
    const text = intentText(envelope);
    if (text === undefined) {
      return { reason: "target '*' needs a capability or an intent (text) to route by" };
    }
    return this.byIntent(envelope, text);
  }

  private async explicit(name: string): Promise<RouteDecision> {
    let agent = this.directory.get(name);
    if (!agent) {
      await this.directory.refresh({ full: true });
      agent = this.directory.get(name);
    }
    // A known agent gets its mail even while offline: its mailbox keeps it.
    if (agent) return { agent, layer: "explicit" };
    return { reason: `unknown agent '${name}': it is not in the registry` };
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
      return chooseForCapability(allowed, capability, this.now(), this.random);
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
      return { reason: `cycle: ${[...envelope.path, looping[0].name].join(" -> ")}` };
    }
    return { reason: `no live agent has capability '${capability}'` };
  }

  private async byIntent(envelope: Envelope, text: string): Promise<RouteDecision> {
    const hits = await this.client.discover({ semantic: text, limit: 10, include_score: true });
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
    return { reason: `no live agent matches the intent '${text.slice(0, 80)}'${detail}` };
  }

  private async take(delivery: ConsumedMessage): Promise<void> {
    let envelope: Envelope;
    try {
      envelope = readEnvelope(delivery);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      this.deadCount++;
      await this.deadLetters.put(`malformed envelope: ${err.message}`, { raw: delivery.text() });
      return;
    }
    if (envelope.sent_at !== undefined) this.hopLatency.add(Math.max(0, preciseNow() - envelope.sent_at));
    await this.deliver(envelope);
  }
}
