import { priorityRank } from "@mq9/protocol";
import { type CoveredLeases, GroupLeases, type Lease, type PriorDeliveries } from "./group-leases.js";
import { type GroupLeaseReport, leaseInfoOf } from "./lease-inspection.js";
import { type ClassRead, RANKS, takeByPriority } from "./message-reads.js";
import { type MessageRow, messageRowOf } from "./message-row-writer.js";
import type { GroupRow, GroupStatements, MessageStatements } from "./sqlite-statements.js";
import type { ClaimOptions, DeliveryPolicy, NakOptions, NakResult, StoredMessage } from "./store.js";

/** A group's policy: its row's, with the mailbox's max_deliver where the group set none. */
function policyOf(row: GroupRow | undefined, mailboxMaxDeliver: number | undefined): DeliveryPolicy {
  const policy: DeliveryPolicy = {};
  if (row?.max_deliver != null) policy.maxDeliver = row.max_deliver;
  else if (mailboxMaxDeliver) policy.maxDeliver = mailboxMaxDeliver;
  if (row?.backoff != null) policy.backoffMs = JSON.parse(row.backoff) as number[];
  return policy;
}

/** The group's policy once a FETCH's fields replace its own; undefined when nothing changes. */
function changedPolicy(
  current: DeliveryPolicy,
  given: DeliveryPolicy | undefined,
): DeliveryPolicy | undefined {
  if (!given) return undefined;
  const next: DeliveryPolicy = { ...current };
  if (given.maxDeliver !== undefined) next.maxDeliver = given.maxDeliver;
  if (given.backoffMs !== undefined) next.backoffMs = given.backoffMs;
  const same =
    next.maxDeliver === current.maxDeliver &&
    JSON.stringify(next.backoffMs ?? null) === JSON.stringify(current.backoffMs ?? null);
  return same ? undefined : next;
}

/** A group's held message the dead-letter sweep takes (see Store.deadLetters). */
export interface HeldDeadLetter {
  mbox: number;
  group: string;
  message: StoredMessage;
  deliveryCount: number;
  reason?: string;
}

/** How the claims write: the store's transactions (see CommitPacer). */
export interface ClaimTransactions {
  /** Runs `change` in a transaction, or in a savepoint when one is open already. */
  atomically<T>(change: () => T): T;
  /** Runs a change that is durable once this returns. */
  committed<T>(change: () => T): T;
  /** Lets the writes that follow join the transaction SENDs collect in (they need no commit of their own). */
  deferred(): void;
}

/** The reads claims are made of. */
export interface ClaimReads {
  classMessages: ClassRead;
  messagesOf: (rows: readonly MessageRow[]) => StoredMessage[];
  priorityOf: MessageStatements["priorityOf"];
  /** The mailbox's default max_deliver (CREATE's), for its groups that set none. */
  mailboxMaxDeliver: (mbox: number) => number | undefined;
}

/**
 * Consumer groups of the embedded store: which messages a FETCH leases to a group and what an
 * ACK releases. Leases live in memory (see GroupLeases), by mailbox id and group name; the class
 * cursors and the ACKs above them are rows. Call every method in a turn of the store (see
 * CommitPacer.turn), with a live mailbox's id.
 */
export class GroupClaims {
  /** What each consumer group has in flight, by mailbox id and group name (memory only). */
  private readonly inFlight = new Map<number, Map<string, GroupLeases>>();
  /**
   * The groups' rows as the database holds them, by mailbox id and group name: this class is the
   * only writer of the groups table (forgetMailbox follows a mailbox's drop), so a FETCH or ACK
   * reads its group without a read transaction of its own.
   */
  private readonly rows = new Map<number, Map<string, GroupRow>>();

  constructor(
    private readonly stmt: GroupStatements,
    private readonly reads: ClaimReads,
    private readonly transactions: ClaimTransactions,
  ) {}

  exists(mbox: number, group: string): boolean {
    return this.rowOf(mbox, group) !== undefined;
  }

  /** The group's row (see `rows`); undefined when there is no such group. */
  private rowOf(mbox: number, group: string): GroupRow | undefined {
    const cached = this.rows.get(mbox)?.get(group);
    if (cached !== undefined) return cached;
    const row = this.stmt.get.get(mbox, group);
    if (row !== undefined) this.keepRow(mbox, group, row);
    return row;
  }

  private keepRow(mbox: number, group: string, row: GroupRow): void {
    let groups = this.rows.get(mbox);
    if (!groups) {
      groups = new Map();
      this.rows.set(mbox, groups);
    }
    groups.set(group, row);
  }

  /** Changes a kept row in step with a write; the change is undone with the write's (see GroupLeases.change). */
  private changeRow(leases: GroupLeases, row: GroupRow, change: Partial<GroupRow>): void {
    const before: Partial<GroupRow> = {};
    for (const key of Object.keys(change) as (keyof GroupRow)[])
      (before as Record<string, unknown>)[key] = row[key];
    Object.assign(row, change);
    leases.onUndo(() => Object.assign(row, before));
  }

  /**
   * Leases the next messages to a group: a claim writes nothing but a new group's row, and a
   * crash only delivers the unACKed messages again (at least once).
   */
  claim(mbox: number, group: string, options: ClaimOptions): StoredMessage[] {
    this.transactions.deferred();
    const stored = this.rowOf(mbox, group);
    // A reset starts over from `start`, keeping only the batch numbering.
    const existing = options.reset ? undefined : stored;
    /** Leases what the claim takes; `write` runs its writes (a policy, delivery counts) atomically. */
    const takeAndLease = (
      cursors: number[],
      leases: GroupLeases,
      row: GroupRow | undefined,
      write: (writes: () => void) => void,
    ) => {
      const policy = changedPolicy(leases.policy, options.policy);
      if (policy) {
        const before = leases.policy;
        leases.policy = policy;
        leases.onUndo(() => {
          leases.policy = before;
        });
      }
      const candidates = this.claimable(mbox, group, cursors, leases, options);
      // Used up before a restart: held for the dead-letter sweep, not delivered again.
      const taken: StoredMessage[] = [];
      for (let i = 0; i < candidates.length; i++) {
        const m = candidates[i];
        if (leases.overLimit(leases.deliveries(m.id))) leases.holdExhausted(m.id, priorityRank[m.priority]);
        else taken.push(m);
      }
      const takenIds = new Array<number>(taken.length);
      const takenRanks = new Array<number>(taken.length);
      for (let i = 0; i < taken.length; i++) {
        takenIds[i] = taken[i].id;
        takenRanks[i] = priorityRank[taken[i].priority];
      }
      const made = leases.lease(takenIds, takenRanks, options.nowMs + options.leaseMs, options.member);
      // Counts past the first are kept, so a restart does not give a failing message more tries.
      const counted = made.some((lease) => lease.count > 1);
      // Most claims write nothing: their reads need no transaction of their own.
      if (policy || counted) {
        write(() => {
          if (policy) {
            const maxDeliver = policy.maxDeliver ?? null;
            const backoff = policy.backoffMs ? JSON.stringify(policy.backoffMs) : null;
            this.stmt.setPolicy.run(maxDeliver, backoff, mbox, group);
            if (row) this.changeRow(leases, row, { max_deliver: maxDeliver, backoff });
          }
          for (let i = 0; i < taken.length; i++) {
            if (made[i].count > 1) this.saveCount(mbox, group, taken[i].id, made[i]);
          }
        });
      }
      // Each read builds its messages afresh: setting the count shares nothing.
      for (let i = 0; i < taken.length; i++) taken[i].deliveryCount = made[i].count;
      return taken;
    };
    if (existing) {
      const leases = this.leasesOf(mbox, group, existing);
      const cursors = [existing.cursor0, existing.cursor1, existing.cursor2];
      // A claim that fails (a record that cannot be read, a write) leases nothing.
      return leases.change(() =>
        takeAndLease(cursors, leases, existing, (writes) => this.transactions.atomically(writes)),
      );
    }
    const from = options.start.fromId;
    const cursors = [from, from, from];
    const batch = stored?.next_batch ?? 0;
    const leases = new GroupLeases(cursors, batch, [], policyOf(stored, this.reads.mailboxMaxDeliver(mbox)));
    const taken = this.transactions.atomically(() => {
      if (options.reset) this.stmt.clearDeliveries.run(mbox, group);
      this.stmt.upsert.run({ mbox, name: group, c0: from, c1: from, c2: from, batch });
      return takeAndLease(cursors, leases, undefined, (writes) => writes());
    });
    // Kept only once the group's row is written: a failed claim leaves the group as it was.
    this.groupsOf(mbox).set(group, leases);
    const row = this.stmt.get.get(mbox, group);
    if (row) this.keepRow(mbox, group, row);
    return taken;
  }

  /**
   * Acknowledges `msgId` and what its claim delivered before it; false when it was never
   * delivered to the group. An ACK whose write fails is undone in memory as well.
   */
  ack(mbox: number, group: string, msgId: number, nowMs: number): boolean {
    const state = this.rowOf(mbox, group);
    if (!state) return false;
    const leases = this.leasesOf(mbox, group, state);
    const covered = leases.coveredBy(msgId);
    if (!covered) {
      const cursors = [state.cursor0, state.cursor1, state.cursor2];
      return leases.acked.has(msgId) || this.isBelowCursor(mbox, msgId, cursors);
    }
    // Its messages then stay leased, and come back once the lease runs out (an error reply
    // means nothing changed).
    return leases.change(() =>
      this.transactions.committed(() => this.release(mbox, group, state, leases, covered, nowMs)),
    );
  }

  /**
   * Gives a leased message back before its lease ends (see Store.nak); an error leaves the
   * lease as it was.
   */
  nak(mbox: number, group: string, msgId: number, options: NakOptions): NakResult {
    const state = this.rowOf(mbox, group);
    if (!state) return { found: false, deadLetter: false };
    const leases = this.leasesOf(mbox, group, state);
    const lease = leases.leaseOf(msgId);
    if (!lease) return { found: false, deadLetter: false };
    this.transactions.deferred();
    return leases.change(() =>
      this.transactions.atomically(() => {
        const given = leases.giveBack(msgId, options.nowMs, options)!;
        this.saveCount(mbox, group, msgId, given);
        return { found: true, deadLetter: leases.isExhausted(given, options.nowMs) };
      }),
    );
  }

  /** Held messages of every group whose deliveries are used up (or NAKed terminally), at most `limit`. */
  deadLetters(nowMs: number, limit: number): HeldDeadLetter[] {
    const found: HeldDeadLetter[] = [];
    for (const [mbox, groups] of this.inFlight) {
      for (const [group, leases] of groups) {
        for (const [id, lease] of leases.allLeases()) {
          if (found.length >= limit) return found;
          if (!leases.isExhausted(lease, nowMs)) continue;
          const row = this.stmt.messageAt.get(mbox, id);
          const stored = row && messageRowOf(row);
          if (!stored || (stored.expires_ms !== null && stored.expires_ms <= nowMs)) {
            // The message is gone (deleted, expired): nothing to keep.
            leases.forget(id);
            continue;
          }
          const [message] = this.reads.messagesOf([stored]);
          const letter: HeldDeadLetter = { mbox, group, message, deliveryCount: lease.count };
          if (lease.reason !== undefined) letter.reason = lease.reason;
          found.push(letter);
        }
      }
    }
    return found;
  }

  /** Ends the group's hold on dead letters stored elsewhere: they count as ACKed, and as dead-lettered. */
  settleDeadLetters(mbox: number, group: string, msgIds: readonly number[], nowMs: number): void {
    const state = this.rowOf(mbox, group);
    if (!state) return;
    const leases = this.leasesOf(mbox, group, state);
    const held: CoveredLeases = { ids: [], ranks: [] };
    for (const id of new Set(msgIds)) {
      const lease = leases.leaseOf(id);
      if (lease && leases.isExhausted(lease, nowMs)) {
        held.ids.push(id);
        held.ranks.push(lease.rank);
      }
    }
    if (held.ids.length === 0) return;
    leases.change(() =>
      this.transactions.committed(() => {
        this.release(mbox, group, state, leases, held, nowMs);
        this.stmt.addDeadLettered.run(held.ids.length, mbox, group);
        this.changeRow(leases, state, { dead_lettered: state.dead_lettered + held.ids.length });
      }),
    );
  }

  /** Takes `covered` out of flight as ACKed, and moves the class cursors past what it can. */
  private release(
    mbox: number,
    group: string,
    row: GroupRow,
    leases: GroupLeases,
    covered: CoveredLeases,
    nowMs: number,
  ): true {
    const cursors = [row.cursor0, row.cursor1, row.cursor2];
    const { ids, ranks } = covered;
    const counted: number[] = [];
    for (let k = 0; k < ids.length; k++) if (leases.leaseOf(ids[k])?.saved) counted.push(ids[k]);
    leases.release(ids);
    const moved = leases.cursorsAfterRelease(cursors);
    const next = [...cursors];
    const written = new Set<number>();
    // ACKs the cursor does not pass are written: they must outlive a restart. Each class's are
    // written before its cursor is looked for below (firstUnackedFrom reads them).
    for (let k = 0; k < ids.length; k++) {
      const rank = ranks[k];
      if (ids[k] < (moved[rank] ?? Number.NEGATIVE_INFINITY)) continue;
      this.stmt.insertAcked.run(mbox, group, ids[k], rank);
      written.add(ids[k]);
      leases.addAcked(ids[k], rank);
    }
    for (const rank of RANKS) {
      next[rank] = moved[rank] ?? this.firstUnackedFrom(mbox, group, rank, cursors[rank], nowMs);
      if (next[rank] !== cursors[rank] && leases.dropAckedBelow(rank, next[rank])) {
        this.stmt.pruneDeliveries.run(mbox, group, rank, next[rank]);
      }
    }
    // A count row not turned into an ACK row goes: the message is done with.
    for (const id of counted) if (!written.has(id)) this.stmt.removeCount.run(mbox, group, id);
    if (next.some((cursor, rank) => cursor !== cursors[rank])) {
      this.stmt.setCursors.run(next[0], next[1], next[2], mbox, group);
      this.changeRow(leases, row, { cursor0: next[0], cursor1: next[1], cursor2: next[2] });
    }
    return true;
  }

  private saveCount(mbox: number, group: string, msgId: number, lease: Lease): void {
    this.stmt.saveCount.run(mbox, group, msgId, lease.rank, lease.untilMs, lease.count, lease.reason ?? null);
    lease.saved = true;
  }

  /** What the group holds in flight (see LeaseInspection.groupLeases); undefined without the group. */
  leaseReport(mbox: number, group: string, nowMs: number, limit: number): GroupLeaseReport | undefined {
    const state = this.rowOf(mbox, group);
    if (!state) return undefined;
    const leases = this.leasesOf(mbox, group, state);
    const held = [...leases.allLeases()].sort(([a], [b]) => a - b);
    const report: GroupLeaseReport = {
      policy: leases.policy,
      leases: [],
      redelivered: held.filter(([, lease]) => lease.count > 1).length,
      deadLettered: state.dead_lettered,
    };
    for (const [msgId, lease] of held.slice(0, limit)) {
      report.leases.push(leaseInfoOf({ msgId, ...lease }, leases.policy, nowMs));
    }
    return report;
  }

  /** Ends a member's running leases now (see LeaseInspection.releaseMemberLeases). */
  releaseMember(mbox: number, group: string, member: string | undefined, nowMs: number): number | undefined {
    const state = this.rowOf(mbox, group);
    if (!state) return undefined;
    return this.leasesOf(mbox, group, state).endLeasesOf(member, nowMs);
  }

  /** Messages of the group whose lease still runs. */
  leased(mbox: number, group: string, nowMs: number): number {
    const leases = this.inFlight.get(mbox)?.get(group);
    let count = 0;
    for (const rank of RANKS) count += leases?.runningIds(rank, nowMs).size ?? 0;
    return count;
  }

  /** A message that was deleted (and committed so): no group holds it any more. */
  forgetMessage(mbox: number, msgId: number): void {
    for (const leases of this.inFlight.get(mbox)?.values() ?? []) leases.forget(msgId);
  }

  /**
   * Forgets the leases of a mailbox dropped or purged: they mean nothing now, and the groups
   * rebuild theirs from the database.
   */
  forgetMailbox(mbox: number): void {
    this.inFlight.delete(mbox);
    this.rows.delete(mbox);
  }

  private groupsOf(mbox: number): Map<string, GroupLeases> {
    let groups = this.inFlight.get(mbox);
    if (!groups) {
      groups = new Map();
      this.inFlight.set(mbox, groups);
    }
    return groups;
  }

  /** The group's in-flight state; after a restart, built from its ACKs in the database. */
  private leasesOf(mbox: number, group: string, state: GroupRow): GroupLeases {
    const groups = this.groupsOf(mbox);
    let leases = groups.get(group);
    if (!leases) {
      const acked = this.stmt.ackedOf.all(mbox, group).map((r) => ({ id: r.msg_id, rank: r.priority }));
      const prior = new Map<number, PriorDeliveries>();
      for (const row of this.stmt.countsOf.all(mbox, group)) {
        const known: PriorDeliveries = { count: row.delivery_count };
        if (row.reason !== null) known.reason = row.reason;
        prior.set(row.msg_id, known);
      }
      const policy = policyOf(state, this.reads.mailboxMaxDeliver(mbox));
      leases = new GroupLeases(
        [state.cursor0, state.cursor1, state.cursor2],
        state.next_batch,
        acked,
        policy,
        prior,
      );
      groups.set(group, leases);
    }
    return leases;
  }

  /**
   * The messages a claim takes, by priority. Within a class, every message up
   * to the highest one delivered is in flight or ACKed, so the scan starts
   * after it; a class with a gap (an expired lease, a restart) is scanned from
   * its cursor instead, skipping what is ACKed or still leased.
   */
  private claimable(
    mbox: number,
    group: string,
    cursors: number[],
    leases: GroupLeases,
    options: ClaimOptions,
  ): StoredMessage[] {
    const { nowMs } = options;
    return takeByPriority(options.limit, options.maxBytes, (rank, remaining) => {
      if (!leases.needsScan(rank, nowMs)) {
        const from = Math.max(cursors[rank], leases.delivered[rank] + 1);
        return this.reads.classMessages(mbox, rank, from, nowMs, 0, remaining);
      }
      const active = leases.activeIds(rank, nowMs);
      const rows = this.stmt.unackedClass
        .all(mbox, rank, cursors[rank], nowMs, mbox, group, remaining + active.size)
        .map(messageRowOf);
      const found = this.reads.messagesOf(rows.filter((row) => !active.has(row.msg_id)).slice(0, remaining));
      if (found.length < remaining) leases.closeGap(rank, new Set(found.map((m) => m.id)), nowMs);
      return found;
    });
  }

  private isBelowCursor(mbox: number, msgId: number, cursors: number[]): boolean {
    const row = this.reads.priorityOf.get(mbox, msgId);
    if (row) return msgId < cursors[row.priority];
    return msgId < Math.min(...cursors);
  }

  /** A class cursor's next place, read from the database: its first live message not ACKed. */
  private firstUnackedFrom(mbox: number, group: string, rank: number, cursor: number, nowMs: number): number {
    const first = this.stmt.firstUnacked.get(mbox, rank, cursor, nowMs, mbox, group)?.msg_id;
    if (first !== null && first !== undefined) return first;
    const acked = this.stmt.maxAcked.get(mbox, group, rank)?.msg_id;
    return acked !== null && acked !== undefined ? Math.max(cursor, acked + 1) : cursor;
  }
}
