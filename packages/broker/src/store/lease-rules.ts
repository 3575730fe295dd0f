import type { DeliveryPolicy } from "./store.js";

/** What the rules read of a lease, as both stores keep it. */
export interface LeaseTimes {
  /** Deliveries to the group so far, this lease's included. */
  count: number;
  untilMs: number;
  /** Set by a NAK: not delivered again before this time (instead of the lease's end plus backoff). */
  retryAtMs?: number;
  /** A terminal NAK. */
  dead?: boolean;
}

/** The wait before delivering again after a message's `count`-th delivery failed. */
export function backoffAfter(policy: DeliveryPolicy, count: number): number {
  const steps = policy.backoffMs;
  if (!steps || steps.length === 0) return 0;
  return steps[Math.min(Math.max(count, 1), steps.length) - 1];
}

/** Whether a message delivered `count` times may not be delivered again (the group's limit). */
export function deliveriesUsedUp(policy: DeliveryPolicy, count: number): boolean {
  const max = policy.maxDeliver;
  return max !== undefined && max > 0 && count >= max;
}

/** Whether a lease's message waits for the dead-letter sweep: NAKed terminally, or its last lease ran out. */
export function heldForDeadLetters(lease: LeaseTimes, policy: DeliveryPolicy, nowMs: number): boolean {
  return lease.dead === true || (lease.untilMs <= nowMs && deliveriesUsedUp(policy, lease.count));
}

/** When a message whose lease ended may be delivered again: a NAK's time, else the lease's end plus backoff. */
export function retryTimeOf(lease: LeaseTimes, policy: DeliveryPolicy): number {
  return lease.retryAtMs ?? lease.untilMs + backoffAfter(policy, lease.count);
}
