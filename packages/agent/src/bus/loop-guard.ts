import { TwoGenerationMap } from "@mq9/protocol";
import type { Envelope } from "./envelope.js";

/** Why a message must not travel further, or undefined when it may. */
export function loopViolation(message: Envelope, nextAgent: string): string | undefined {
  if (message.hops >= message.max_hops) {
    return `max_hops exhausted (${message.hops} of ${message.max_hops})`;
  }
  // A query that returns to an agent already on its path is going round in circles.
  if (message.msg_type === "query" && message.path.includes(nextAgent)) {
    return `cycle: ${[...message.path, nextAgent].join(" -> ")}`;
  }
  return undefined;
}

/** Counts messages per trace and says when a trace has used up its budget. */
export class TraceBudget {
  private readonly counts: TwoGenerationMap<string, number>;

  constructor(
    readonly perTrace: number,
    /** Traces remembered at once (about); the least recently active are forgotten first. */
    capacity = 100_000,
  ) {
    this.counts = new TwoGenerationMap(capacity);
  }

  /** Records one message; false once the trace is over budget. */
  spend(traceId: string): boolean {
    const used = (this.counts.get(traceId) ?? 0) + 1;
    this.counts.set(traceId, used);
    return used <= this.perTrace;
  }

  /** Messages counted so far for a trace. */
  used(traceId: string): number {
    return this.counts.get(traceId) ?? 0;
  }

  forget(traceId: string): void {
    this.counts.delete(traceId);
  }
}

/** Remembers recently seen msg_ids so at-least-once delivery never runs a handler twice. */
export class SeenMessages {
  private readonly seen: TwoGenerationMap<string, true>;

  /** `capacity`: ids remembered at once (about); the oldest are forgotten first. */
  constructor(capacity = 100_000) {
    this.seen = new TwoGenerationMap(capacity);
  }

  /** Whether an id was offered before (without offering it). */
  has(msgId: string): boolean {
    return this.seen.has(msgId);
  }

  /** Forgets an id (its handling failed, so its redelivery is not a duplicate). */
  forget(msgId: string): void {
    this.seen.delete(msgId);
  }

  /** True the first time an id is offered. */
  firstTime(msgId: string): boolean {
    if (this.seen.has(msgId)) return false;
    this.seen.set(msgId, true);
    return true;
  }
}
