/** A message delivered to a group and not yet ACKed. */
interface Lease {
  rank: number;
  batch: number;
  pos: number;
  untilMs: number;
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

  constructor(
    cursors: readonly number[],
    nextBatch: number,
    acked: Iterable<{ id: number; rank: number }> = [],
  ) {
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

  /** Leases a claim's messages to the group as one batch. */
  lease(messages: readonly { id: number; rank: number }[], untilMs: number): void {
    if (this.undo) {
      const before = {
        delivered: [...this.delivered],
        nextBatch: this.nextBatch,
        ids: messages.map((m) => m.id),
      };
      const previous = before.ids.map((id) => this.leases.get(id));
      this.undo.push(() => {
        before.ids.forEach((id, i) => {
          const lease = previous[i];
          if (lease) this.leases.set(id, lease);
          else this.leases.delete(id);
        });
        this.delivered.splice(0, 3, ...before.delivered);
        this.nextBatch = before.nextBatch;
      });
    }
    const batch = this.nextBatch++;
    for (let pos = 0; pos < messages.length; pos++) {
      const { id, rank } = messages[pos];
      this.leases.set(id, { rank, batch, pos, untilMs });
      if (id > this.delivered[rank]) this.delivered[rank] = id;
    }
  }

  /** Whether a claim must scan the class from its cursor: a gap, or a lease that has run out. */
  needsScan(rank: number, nowMs: number): boolean {
    if (this.gap[rank]) return true;
    for (const lease of this.leases.values()) if (lease.rank === rank && lease.untilMs <= nowMs) return true;
    return false;
  }

  /** Ids of the class whose lease still runs. */
  activeIds(rank: number, nowMs: number): Set<number> {
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
      if (lease.rank === rank && lease.untilMs <= nowMs && !found.has(id)) dropped.push([id, lease]);
    }
    for (const [id] of dropped) this.leases.delete(id);
    this.undo?.push(() => {
      this.gap[rank] = hadGap;
      for (const [id, lease] of dropped) this.leases.set(id, lease);
    });
  }

  /** The leases an ACK of `id` covers (its batch, up to its position), with their ranks; undefined when `id` is not leased. */
  coveredBy(id: number): Map<number, number> | undefined {
    const acked = this.leases.get(id);
    if (!acked) return undefined;
    const covered = new Map<number, number>();
    for (const [other, lease] of this.leases) {
      if (lease.batch === acked.batch && lease.pos <= acked.pos) covered.set(other, lease.rank);
    }
    return covered;
  }

  /** Takes ACKed messages out of flight. */
  release(ids: Iterable<number>): void {
    for (const id of ids) {
      const lease = this.leases.get(id);
      if (!lease) continue;
      this.leases.delete(id);
      this.undo?.push(() => this.leases.set(id, lease));
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
    for (const [id, lease] of this.leases) if (id < lowest[lease.rank]) lowest[lease.rank] = id;
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
  }
}
