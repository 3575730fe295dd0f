import {
  backoffAfter,
  deliveriesUsedUp,
  heldForDeadLetters,
  type LeaseTimes,
  retryTimeOf,
} from "./lease-rules.js";
import type { DeliveryPolicy } from "./store.js";

/** A message delivered to a group and not yet ACKed (its times and count: see LeaseTimes). */
export interface Lease extends LeaseTimes {
  rank: number;
  batch: number;
  pos: number;
  /** The ids of the claim's batch in order, shared by its leases: what an ACK of one covers. */
  batchIds?: readonly number[];
  /** The consumer holding it (FETCH `member`, else its connection's name). */
  member?: string;
  /** Why the last delivery failed (a NAK's reason). */
  reason?: string;
  /** A count row holds the message (written from its second delivery on, or by a NAK). */
  saved?: boolean;
}

/** Leased messages an ACK covers, in batch order, and their classes (parallel arrays). */
export interface CoveredLeases {
  ids: number[];
  ranks: number[];
}

/** What a group knew of a message's deliveries before a restart (its count row). */
export interface PriorDeliveries {
  count: number;
  reason?: string;
}

/**
 * What one consumer group has in flight, kept in memory: a lease needs no
 * durability, because a broker that restarts delivers every message not ACKed
 * again (at least once). Only the class cursors and the ACKs above them (an
 * out-of-order ACK) are written to the database; this mirrors those ACKs.
 *
 * Within a priority class, every live message from the cursor up to
 * `delivered` has been delivered, and is leased or ACKed, unless `gap` says
 * otherwise (after a restart, or once a lease expired): then claims scan from
 * the cursor.
 */
export class GroupLeases {
  private readonly leases = new Map<number, Lease>();
  /** While a change runs (see `change`), how to put back what it did, newest last. */
  private undo?: (() => void)[];
  /** ACKed messages above their class cursor, by id, with their rank (changed through addAcked). */
  readonly acked = new Map<number, number>();
  /** Per class: the highest id delivered so far (the cursor - 1 before any). */
  readonly delivered: number[];
  /** Per class: live messages up to `delivered` may be neither leased nor ACKed. */
  readonly gap = [false, false, false];
  private nextBatch: number;
  /** Delivery counts written before a restart, for messages not leased since. */
  private readonly prior: Map<number, PriorDeliveries>;

  constructor(
    cursors: readonly number[],
    nextBatch: number,
    acked: Iterable<{ id: number; rank: number }> = [],
    /** The group's limit and backoff (see DeliveryPolicy); changed by a FETCH that gives them. */
    public policy: DeliveryPolicy = {},
    prior: Map<number, PriorDeliveries> = new Map(),
  ) {
    this.prior = prior;
    this.nextBatch = nextBatch;
    this.delivered = cursors.map((cursor) => cursor - 1);
    for (const { id, rank } of acked) {
      if (id < cursors[rank]) continue;
      this.acked.set(id, rank);
      // What was leased around it before the restart is not known: scan from the cursor.
      this.gap[rank] = true;
      this.delivered[rank] = Math.max(this.delivered[rank], id);
    }
  }

  /**
   * Runs `change`, which also writes to the database: when it throws (the write failed and was
   * rolled back), what it did to this state is put back too, so a failed ACK or claim changed
   * nothing.
   */
  change<T>(change: () => T): T {
    const outer = this.undo;
    const undo: (() => void)[] = [];
    this.undo = undo;
    try {
      return change();
    } catch (err) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]();
      throw err;
    } finally {
      this.undo = outer;
      outer?.push(...undo);
    }
  }

  /** Puts something else back too when the change running now fails (see `change`). */
  onUndo(undo: () => void): void {
    this.undo?.push(undo);
  }

  /** How many times the message has been delivered to the group (0: never, as far as it knows). */
  deliveries(id: number): number {
    return this.leases.get(id)?.count ?? this.prior.get(id)?.count ?? 0;
  }

  /** Whether another delivery of a message delivered `count` times is over the group's limit. */
  overLimit(count: number): boolean {
    return deliveriesUsedUp(this.policy, count);
  }

  /**
   * Leases a claim's messages (`ids`, of classes `ranks`) to the group as one batch; each one's
   * delivery count goes up. The leases keep `ids` as their batch's: the caller must not change it.
   * Returns the leases made, in order.
   */
  lease(ids: readonly number[], ranks: readonly number[], untilMs: number, member?: string): Lease[] {
    const batch = this.nextBatch++;
    const made: Lease[] = new Array(ids.length);
    // What the undo puts back: most claims lease fresh messages, with nothing to remember per message.
    const delivered = this.undo ? [...this.delivered] : undefined;
    let replaced: { id: number; lease?: Lease; prior?: PriorDeliveries }[] | undefined;
    const leases = this.leases;
    for (let pos = 0; pos < ids.length; pos++) {
      const id = ids[pos];
      const rank = ranks[pos];
      const previous = leases.get(id);
      const known = this.prior.size > 0 ? this.prior.get(id) : undefined;
      if (delivered && (previous || known)) {
        replaced ??= [];
        replaced.push({ id, lease: previous, prior: known });
      }
      const lease: Lease = {
        rank,
        batch,
        pos,
        batchIds: ids,
        untilMs,
        count: (previous?.count ?? known?.count ?? 0) + 1,
        member,
        saved: previous?.saved === true || known !== undefined ? true : undefined,
      };
      leases.set(id, lease);
      if (known) this.prior.delete(id);
      made[pos] = lease;
      if (id > this.delivered[rank]) this.delivered[rank] = id;
    }
    if (delivered) {
      this.undo!.push(() => {
        for (const id of ids) this.leases.delete(id);
        for (const { id, lease, prior } of replaced ?? []) {
          if (lease) this.leases.set(id, lease);
          if (prior) this.prior.set(id, prior);
        }
        this.delivered.splice(0, 3, ...delivered);
        this.nextBatch = batch;
      });
    }
    return made;
  }

  /**
   * Holds a message whose deliveries are used up (known from before a restart) for the dead-letter
   * sweep, without delivering it again.
   */
  holdExhausted(id: number, rank: number): void {
    const count = this.deliveries(id);
    const known = this.prior.get(id);
    const lease: Lease = { rank, batch: -1, pos: 0, untilMs: 0, count };
    if (known?.reason !== undefined) lease.reason = known.reason;
    if (known !== undefined) lease.saved = true;
    this.leases.set(id, lease);
    this.prior.delete(id);
    if (id > this.delivered[rank]) this.delivered[rank] = id;
    this.undo?.push(() => {
      this.leases.delete(id);
      if (known) this.prior.set(id, known);
    });
  }

  /** The lease of a message, if the group holds one (running, run out, or waiting to be retried). */
  leaseOf(id: number): Lease | undefined {
    return this.leases.get(id);
  }

  /** Every lease the group holds, by message id. */
  allLeases(): IterableIterator<[number, Lease]> {
    return this.leases.entries();
  }

  /** Whether a lease ended and its message waits for the dead-letter sweep. */
  isExhausted(lease: Lease, nowMs: number): boolean {
    return heldForDeadLetters(lease, this.policy, nowMs);
  }

  /** Whether a lease's message may be delivered again now. */
  private isClaimable(lease: Lease, nowMs: number): boolean {
    if (lease.untilMs > nowMs || this.isExhausted(lease, nowMs)) return false;
    return retryTimeOf(lease, this.policy) <= nowMs;
  }

  /**
   * Gives a leased message back now (a NAK): delivered again after `delayMs` (default: the
   * group's backoff), or, `terminal`, held for the dead-letter sweep.
   */
  giveBack(
    id: number,
    nowMs: number,
    options: { reason?: string; delayMs?: number; terminal?: boolean },
  ): Lease | undefined {
    const lease = this.leases.get(id);
    if (!lease) return undefined;
    const before = { ...lease };
    // Out of its claim's batch: an ACK of a later message of that claim must not cover it.
    lease.batch = -1;
    lease.untilMs = Math.min(lease.untilMs, nowMs);
    lease.retryAtMs = nowMs + (options.delayMs ?? backoffAfter(this.policy, lease.count));
    if (options.reason !== undefined) lease.reason = options.reason;
    if (options.terminal) lease.dead = true;
    this.undo?.push(() => this.leases.set(id, before));
    return lease;
  }

  /** Whether a claim must scan the class from its cursor: a gap, or a message to deliver again. */
  needsScan(rank: number, nowMs: number): boolean {
    if (this.gap[rank]) return true;
    for (const lease of this.leases.values())
      if (lease.rank === rank && this.isClaimable(lease, nowMs)) return true;
    return false;
  }

  /** Ids of the class a claim must pass over: leases running, waiting out a backoff, or used up. */
  activeIds(rank: number, nowMs: number): Set<number> {
    const ids = new Set<number>();
    for (const [id, lease] of this.leases)
      if (lease.rank === rank && !this.isClaimable(lease, nowMs)) ids.add(id);
    return ids;
  }

  /**
   * Ends the running leases of `member` (every member's when undefined) now, without a backoff:
   * the group's other members get the messages at once. Returns how many.
   */
  endLeasesOf(member: string | undefined, nowMs: number): number {
    let ended = 0;
    for (const lease of this.leases.values()) {
      if (lease.untilMs <= nowMs || (member !== undefined && lease.member !== member)) continue;
      lease.untilMs = nowMs;
      lease.retryAtMs = nowMs;
      ended++;
    }
    return ended;
  }

  /** Messages of the class leased to a member now (their lease runs). */
  runningIds(rank: number, nowMs: number): Set<number> {
    const ids = new Set<number>();
    for (const [id, lease] of this.leases) if (lease.rank === rank && lease.untilMs > nowMs) ids.add(id);
    return ids;
  }

  /**
   * After a scan from the cursor that found fewer messages than it could take: every live
   * message of the class not leased or ACKed was found, so there is no gap left, and an
   * expired lease the scan did not find belongs to a message that is gone.
   */
  closeGap(rank: number, found: ReadonlySet<number>, nowMs: number): void {
    const hadGap = this.gap[rank];
    this.gap[rank] = false;
    const dropped: [number, Lease][] = [];
    for (const [id, lease] of this.leases) {
      if (lease.rank === rank && this.isClaimable(lease, nowMs) && !found.has(id)) dropped.push([id, lease]);
    }
    for (const [id] of dropped) this.leases.delete(id);
    this.undo?.push(() => {
      this.gap[rank] = hadGap;
      for (const [id, lease] of dropped) this.leases.set(id, lease);
    });
  }

  /** The leases an ACK of `id` covers (its batch, up to its position), with their ranks; undefined when `id` is not leased. */
  coveredBy(id: number): CoveredLeases | undefined {
    const acked = this.leases.get(id);
    if (!acked) return undefined;
    // A lease given back (or held for dead letters) stands alone.
    if (acked.batch < 0) return { ids: [id], ranks: [acked.rank] };
    const covered: CoveredLeases = { ids: [], ranks: [] };
    // Those of its batch still held as they were leased (not given back, not leased again).
    const ids = acked.batchIds ?? [];
    for (let pos = 0; pos <= acked.pos && pos < ids.length; pos++) {
      const lease = this.leases.get(ids[pos]);
      if (lease !== undefined && lease.batch === acked.batch && lease.pos === pos) {
        covered.ids.push(ids[pos]);
        covered.ranks.push(lease.rank);
      }
    }
    return covered;
  }

  /** Takes ACKed messages out of flight. */
  release(ids: readonly number[]): void {
    // Kept for the undo by position in `ids` (undefined: not leased), no pair per message.
    let released: (Lease | undefined)[] | undefined;
    for (let k = 0; k < ids.length; k++) {
      const lease = this.leases.get(ids[k]);
      if (!lease) continue;
      this.leases.delete(ids[k]);
      if (this.undo) {
        released ??= new Array(ids.length);
        released[k] = lease;
      }
    }
    if (released) {
      const kept = released;
      this.undo!.push(() => {
        for (let k = 0; k < ids.length; k++) if (kept[k]) this.leases.set(ids[k], kept[k]!);
      });
    }
  }

  /** Notes an ACK above its class cursor. */
  addAcked(id: number, rank: number): void {
    if (this.acked.has(id)) return;
    this.acked.set(id, rank);
    this.undo?.push(() => this.acked.delete(id));
  }

  /**
   * Where each class cursor can move once nothing below it is in flight: the lowest leased id,
   * else the first id not delivered yet. Undefined for a class with a gap (the database knows).
   */
  cursorsAfterRelease(cursors: readonly number[]): (number | undefined)[] {
    const lowest = this.delivered.map((d) => d + 1);
    this.leases.forEach((lease, id) => {
      if (id < lowest[lease.rank]) lowest[lease.rank] = id;
    });
    return cursors.map((cursor, rank) => (this.gap[rank] ? undefined : Math.max(cursor, lowest[rank])));
  }

  /** Forgets ACKs a class cursor has moved past. Returns whether any were dropped. */
  dropAckedBelow(rank: number, cursor: number): boolean {
    let dropped = false;
    for (const [id, r] of this.acked) {
      if (r === rank && id < cursor) {
        this.acked.delete(id);
        this.undo?.push(() => this.acked.set(id, r));
        dropped = true;
      }
    }
    return dropped;
  }

  /** A message that was deleted: it is no longer in flight or ACKed. */
  forget(id: number): void {
    this.leases.delete(id);
    this.acked.delete(id);
    this.prior.delete(id);
  }
}
