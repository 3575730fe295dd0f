import { TwoGenerationMap } from "@mq9/protocol";

/** What the router keeps of one trace. */
interface TraceEntry {
  /** Messages routed in the trace (its budget). */
  routed: number;
  /** The hops of the last message delivered to each agent in the trace: most traces see one agent. */
  lastAgent?: string;
  lastHops?: number;
  others?: Map<string, number>;
}

/**
 * Per trace, in one entry: the messages routed (the trace budget) and the hops of the last
 * message delivered to each agent, so that what an agent sends next in that trace is further
 * along even when it built a new message. One map lookup per question, and no key built per
 * message, on the router's hot path.
 */
export class TraceLedger {
  private readonly traces: TwoGenerationMap<string, TraceEntry>;

  constructor(
    /** Messages one trace may route. */
    readonly perTrace: number,
    /** Traces remembered at once (about); the least recently active are forgotten first. */
    capacity = 200_000,
  ) {
    this.traces = new TwoGenerationMap(capacity);
  }

  /** Messages routed so far in a trace. */
  used(traceId: string): number {
    return this.traces.get(traceId)?.routed ?? 0;
  }

  /** Counts one routed message into the trace's budget. */
  spend(traceId: string): void {
    this.entry(traceId).routed++;
  }

  /** A message at `hops` was delivered to `agent` in the trace. */
  delivered(traceId: string, agent: string, hops: number): void {
    const entry = this.entry(traceId);
    if (entry.lastAgent === undefined || entry.lastAgent === agent) {
      entry.lastAgent = agent;
      entry.lastHops = hops;
      return;
    }
    entry.others ??= new Map();
    entry.others.set(entry.lastAgent, entry.lastHops!);
    entry.lastAgent = agent;
    entry.lastHops = hops;
  }

  /** The hops of the last message delivered to `agent` in the trace, if any. */
  hopsDelivered(traceId: string, agent: string): number | undefined {
    const entry = this.traces.get(traceId);
    if (entry === undefined) return undefined;
    if (entry.lastAgent === agent) return entry.lastHops;
    return entry.others?.get(agent);
  }

  /** A finished trace's budget starts again; the hops delivered in it are kept. */
  forgetBudget(traceId: string): void {
    const entry = this.traces.get(traceId);
    if (entry) entry.routed = 0;
  }

  private entry(traceId: string): TraceEntry {
    let entry = this.traces.get(traceId);
    if (entry === undefined) {
      entry = { routed: 0 };
      this.traces.set(traceId, entry);
    }
    return entry;
  }
}
