import { heldForDeadLetters, type LeaseTimes, retryTimeOf } from "./lease-rules.js";
import type { DeliveryPolicy } from "./store.js";

/** A message a group has delivered and not ACKed, as an operator sees it. */
export interface LeaseInfo {
  msgId: number;
  /** The consumer holding it (FETCH `member`, else its connection's name); undefined when unknown. */
  member?: string;
  deliveryCount: number;
  /** When its lease ends (or ended). */
  leaseUntilMs: number;
  /**
   * `leased`: a member holds it; `waiting`: its lease ended and it waits to be delivered again
   * (a backoff step or a NAK's delay); `dead`: it waits for the dead-letter sweep.
   */
  state: "leased" | "waiting" | "dead";
  /** When a waiting message may go again (a NAK's retry time, or the lease's end plus backoff). */
  retryAtMs?: number;
  /** The last failure's reason (a NAK's). */
  reason?: string;
}

/** What a group holds in flight, with its delivery policy and dead-letter count. */
export interface GroupLeaseReport {
  policy: DeliveryPolicy;
  leases: LeaseInfo[];
  /** Messages in flight delivered more than once. */
  redelivered: number;
  /** Messages the group gave up to the dead-letter mailbox so far. */
  deadLettered: number;
}

/**
 * The lease side of a group, for inspection and repair: what it holds and who holds it, and a
 * way to end a member's leases now (a consumer that hangs). Both stores offer it.
 */
export interface LeaseInspection {
  /** The group's leases (at most `limit`, by msg_id); undefined when the mailbox or group is missing. */
  groupLeases(
    mailbox: string,
    group: string,
    nowMs: number,
    limit: number,
  ): Promise<GroupLeaseReport | undefined>;
  /**
   * Ends the running leases of `member` (all members when undefined) now: their messages go to
   * the group's other members at once. Returns how many; undefined when the group is missing.
   */
  releaseMemberLeases(
    mailbox: string,
    group: string,
    member: string | undefined,
    nowMs: number,
  ): Promise<number | undefined>;
}

export function canInspectLeases(store: object): store is LeaseInspection {
  return typeof (store as Partial<LeaseInspection>).groupLeases === "function";
}

/** A lease as a store keeps it, in the fields its report needs. */
export interface HeldLease extends LeaseTimes {
  msgId: number;
  member?: string;
  reason?: string;
}

/** What an operator is told of a lease, the same way for both stores. */
export function leaseInfoOf(lease: HeldLease, policy: DeliveryPolicy, nowMs: number): LeaseInfo {
  const info: LeaseInfo = {
    msgId: lease.msgId,
    deliveryCount: lease.count,
    leaseUntilMs: lease.untilMs,
    state: "leased",
  };
  if (lease.member !== undefined) info.member = lease.member;
  if (lease.reason !== undefined) info.reason = lease.reason;
  if (heldForDeadLetters(lease, policy, nowMs)) info.state = "dead";
  else if (lease.untilMs <= nowMs) {
    info.state = "waiting";
    info.retryAtMs = retryTimeOf(lease, policy);
  }
  return info;
}
