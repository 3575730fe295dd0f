import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { priorityRank } from "@mq9/protocol";
import type Database from "better-sqlite3";
import { type AppendedRow, encodeAppendedRows } from "./appended-rows.js";
import { CommitPacer } from "./commit-pacer.js";
import { deadLetterOf, lettersByGroup } from "./dead-letter-rows.js";
import { DiskUpkeep } from "./disk-upkeep.js";
import { GroupClaims } from "./group-claims.js";
import type { InboxBindingsStore } from "./inbox-bindings.js";
import { InboxBindingsFile } from "./inbox-bindings-file.js";
import type { GroupLeaseReport, LeaseInspection } from "./lease-inspection.js";
import { isLive, MailboxRows, mailboxRecordOf } from "./mailbox-rows.js";
import { MessageIds } from "./message-ids.js";
import { MessageLog } from "./message-log.js";
import { MessageReads, RANKS, takeByPriority } from "./message-reads.js";
import {
  type LocatedRow,
  locationOf,
  MESSAGE_READ_COLUMNS,
  MessageRowWriter,
  messageRowOf,
  type RawMessageRow,
  type ReplacedMessage,
} from "./message-row-writer.js";
import type { OneTripRequests } from "./one-trip-requests.js";
import type { CorruptRecordError } from "./record-checks.js";
import { RECORD_HEADER } from "./record-framing.js";
import { RecordSlab } from "./record-slab.js";
import { SegmentCompactor } from "./segment-compactor.js";
import { SendKeys } from "./send-keys.js";
import { openSqliteDatabase } from "./sqlite-database.js";
import { type MailboxRow, prepareStatements, type SqliteStatements } from "./sqlite-statements.js";
import { SqliteStats } from "./sqlite-stats.js";
import { StorageError } from "./storage-error.js";
import { StorageHealth, type StorageState } from "./storage-health.js";
import type {
  AppendResult,
  ClaimOptions,
  DeadLetter,
  MailboxRecord,
  NakOptions,
  NakResult,
  NewMessage,
  PurgeResult,
  ReadOptions,
  StartPosition,
  Store,
  StoreCapabilities,
  StoredMessage,
  StoreHealth,
  StoreQuery,
  StoreWatchOptions,
} from "./store.js";
import {
  type GroupStats,
  type MailboxStats,
  type MailboxStatsOptions,
  type OwnedMailboxes,
  type PurgeFilter,
  purgesAll,
  type StoreInspection,
  type StoreTotals,
} from "./store-inspection.js";
import { type StoreLogStatus, watchStoreLog } from "./store-log-gauges.js";

export type { StorageState } from "./storage-health.js";
export type { StoreLogStatus } from "./store-log-gauges.js";

export type SyncMode = "normal" | "full";

/** Free bytes SENDs leave to SQLite (see StorageHealth); below it the store counts as full. */
const DEFAULT_RESERVE_BYTES = 8 * 1024 * 1024;

export interface SqliteStoreOptions {
  /** Folder that holds `mq9.db`; created when missing. Use ":memory:" for a throw-away store. */
  dataDir: string;
  /** normal: a commit survives a killed process; full: it also survives power loss. */
  sync?: SyncMode;
  /**
   * How long SENDs may sit in the message log before the database commits
   * them (they are durable either way); any other change commits at once.
   */
  commitIntervalMs?: number;
  /** Memory for the newest messages, which claims and reads take without reading SQLite (default 4 MiB, 0 = none). */
  recentMessageBytes?: number;
  /** Size at which the message log starts a new segment file (default 64 MiB). */
  logSegmentBytes?: number;
  /**
   * Write the rows of SENDs into SQLite on a worker thread (default), or on the calling thread,
   * which costs the event loop the row writes but needs no second thread.
   */
  rowsOnWorker?: boolean;
  /**
   * Free bytes SENDs leave on the file system for SQLite (default 8 MiB): a SEND that would go
   * below is refused as if the disk were full, so the rows of acknowledged SENDs always fit.
   */
  reserveBytes?: number;
  /** Told when that worker failed (the store then writes the rows itself, losing none). */
  onRowWorkerFailed?: (err: Error) => void;
  /**
   * Told once of each record of the message log found corrupt (its checksum does not match):
   * at start-up among the records replayed, or when a message in it is read.
   */
  onCorruptRecord?: (err: CorruptRecordError) => void;
  /** Crash tests only: see SegmentCompactorOptions.afterCopyWritten. */
  afterCopyWritten?: () => void;
}

const DEFAULT_COMMIT_INTERVAL_MS = 25;

/** The conditions (after `mbox = @mbox`) and parameters of a filtered PURGE. */
function purgeWhere(filter: PurgeFilter): { where: string; params: Record<string, unknown> } {
  let where = "";
  const params: Record<string, unknown> = {};
  if (filter.priority !== undefined) {
    where += " AND priority = @priority";
    params.priority = priorityRank[filter.priority];
  }
  if (filter.key !== undefined) {
    where += " AND msg_key = @key";
    params.key = filter.key;
  }
  if (filter.tag !== undefined) {
    where += " AND tags IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(tags) WHERE value = @tag)";
    params.tag = filter.tag;
  }
  if (filter.createdUpToMs !== undefined) {
    where += " AND created_ms <= @upTo";
    params.upTo = filter.createdUpToMs;
  }
  return { where, params };
}
/**
 * Enough for consumers that keep up (a few thousand 1 KiB messages); the cache holds a buffer of
 * this size for the store's life (see RecentMessages). The broker asks for more (see
 * BrokerDefaults.messageCacheBytes).
 */
const DEFAULT_RECENT_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * The embedded store: one SQLite file in WAL mode, owned by this process (exclusive lock), and
 * a message log that SENDs are durable in before their rows reach SQLite. This class is the
 * Store facade; each job is a collaborator with its own state:
 *
 * - `pacer` (CommitPacer): when rows are committed, the row worker, turns on the connection;
 * - `claims` (GroupClaims): consumer-group cursors and leases;
 * - `reads` (MessageReads): rows to messages, their bytes from memory or the log;
 * - `ids` (MessageIds): the msg_id sequence and its committed reservation;
 * - `upkeep` (DiskUpkeep): WAL checkpoints, vacuum; it runs `compactor` (SegmentCompactor),
 *   which deletes or compacts the log segments no row needs;
 * - `space` (StorageHealth): whether there is room to write;
 * - `mailboxes` (MailboxRows), `stats` (SqliteStats), `stmt` (the statement catalogue).
 */
export class SqliteStore implements Store, StoreInspection, LeaseInspection, OneTripRequests {
  private readonly db: Database.Database;
  private readonly stmt: SqliteStatements;
  private readonly rows: MessageRowWriter;
  private readonly mailboxes: MailboxRows;
  private readonly pacer: CommitPacer;
  private readonly upkeep: DiskUpkeep;
  private readonly reads: MessageReads;
  private readonly claims: GroupClaims;
  private readonly ids: MessageIds;
  private readonly space: StorageHealth;
  private readonly stats: SqliteStats;
  /** Where SENDs are made durable and their payloads kept (absent for an in-memory store). */
  private readonly log?: MessageLog;
  /** Gives back the log's space: segments no row needs (absent for an in-memory store). */
  private readonly compactor?: SegmentCompactor;
  /** Held open for the store's life: a second broker on the same directory is refused. */
  private readonly ownerLock?: Database.Database;
  /** Idempotency keys of SENDs within their window (see SendKeys). */
  private readonly sendKeys = new SendKeys();
  /** Memory for the log records SENDs are encoded into. */
  private readonly records = new RecordSlab();
  private corruptRecords = 0;
  /** Where it is, for describe(). */
  private readonly where: string;
  /** `inboxes.json` in the data directory (absent for an in-memory store). */
  private readonly inboxes?: InboxBindingsFile;
  /** Owned by this process alone; appends on this thread. */
  readonly capabilities: StoreCapabilities = { shared: false, appendsElsewhere: false };

  constructor(options: SqliteStoreOptions) {
    const synchronous = options.sync === "full" ? "FULL" : "NORMAL";
    const opened = openSqliteDatabase(options.dataDir, synchronous);
    const { db, file } = opened;
    this.db = db;
    this.ownerLock = opened.ownerLock;
    const inMemory = file === ":memory:";
    this.where = inMemory ? "in memory" : `in ${options.dataDir}`;
    if (!inMemory) this.inboxes = new InboxBindingsFile(join(options.dataDir, "inboxes.json"));
    this.space = new StorageHealth(
      inMemory ? undefined : options.dataDir,
      options.reserveBytes ?? DEFAULT_RESERVE_BYTES,
    );
    this.stmt = prepareStatements(db);
    this.rows = new MessageRowWriter(db, (located, msgId, mbox) => {
      if (located) this.log?.released(located);
      this.pacer.noteReplaced(mbox, msgId);
    });
    this.mailboxes = new MailboxRows(this.stmt.mailboxes);
    if (!inMemory) {
      this.log = this.openLog(options);
      this.compactor = new SegmentCompactor(db, this.log, { afterCopyWritten: options.afterCopyWritten });
    }
    this.pacer = new CommitPacer({
      db,
      stmt: this.stmt.transaction,
      rows: this.rows,
      log: this.log,
      commitIntervalMs: options.commitIntervalMs ?? DEFAULT_COMMIT_INTERVAL_MS,
      hooks: {
        afterCommit: () => this.upkeep.afterCommit(),
        afterWorkerCommit: () => this.upkeep.afterWorkerCommit(),
        onFailure: this.space.noteFailure,
        replacedCommitted: (replaced) => this.endReplaced(replaced),
      },
    });
    this.upkeep = new DiskUpkeep(
      db,
      file,
      synchronous,
      this.stmt,
      this.compactor,
      this.pacer,
      opened.incrementalVacuum,
    );
    if (!inMemory && options.rowsOnWorker !== false) {
      this.pacer.startWorker(file, synchronous, options.onRowWorkerFailed);
    }
    this.reads = new MessageReads(
      this.stmt.messages,
      this.log,
      options.recentMessageBytes ?? DEFAULT_RECENT_MESSAGE_BYTES,
    );
    this.claims = new GroupClaims(
      this.stmt.groups,
      {
        classMessages: this.reads.classMessages,
        messagesOf: this.reads.messagesOf,
        priorityOf: this.stmt.messages.priorityOf,
        mailboxMaxDeliver: (mbox) => this.stmt.mailboxes.byId.get(mbox)?.max_deliver ?? undefined,
      },
      this.pacer,
    );
    this.stats = new SqliteStats(db, this.stmt.stats, this.claims);
    this.ids = new MessageIds(db, this.stmt.messages, this.pacer, this.space.noteFailure);
    this.sendKeys.load(db, Date.now());
  }

  /** The message log's size and the rows still to be written to SQLite; undefined in memory. */
  logStatus(): StoreLogStatus | undefined {
    if (!this.log) return undefined;
    const log = this.log.status();
    const { walBytes, dbFreeBytes } = this.upkeep.slack();
    return {
      ...log,
      rowsWaiting: this.pacer.rowsWaiting,
      corruptRecords: this.corruptRecords,
      walBytes,
      dbFreeBytes,
      reclaimableBytes: Math.max(0, log.logBytes - log.messageBytes) + walBytes + dbFreeBytes,
    };
  }

  /**
   * "full" while less than the reserve is free (SENDs are refused), while the worker cannot
   * write its rows, or for a few seconds after a write failed for lack of space; "ok"
   * otherwise. Looked at on each /healthz, so an idle broker recovers too.
   */
  storageState(): StorageState {
    return this.space.state(this.pacer.stalledBy !== undefined);
  }

  describe(): string {
    return `SQLite ${this.where}`;
  }

  /** "full" (not ok) while writes fail for lack of space; reads go on, and it recovers by itself. */
  health(): StoreHealth {
    const storage = this.storageState();
    return { ok: storage === "ok", storage };
  }

  /** Gauges of the message log; nothing runs for them but their reads at each scrape. */
  watch(options: StoreWatchOptions): void {
    watchStoreLog(options.metrics, () => this.logStatus());
  }

  /** One process owns the store: there is nothing to share. */
  sharedDatabase(): undefined {
    return undefined;
  }

  /** In `inboxes.json` beside `mq9.db`, as before they were the store's (existing directories keep theirs). */
  inboxBindings(): InboxBindingsStore | undefined {
    return this.inboxes;
  }

  async createMailbox(record: MailboxRecord, nowMs: number): Promise<boolean> {
    return this.pacer.turn(() => {
      return this.pacer.committed(() => {
        const existing = this.mailboxes.row(record.address);
        if (existing) {
          if (isLive(existing, nowMs)) return false;
          this.dropMailbox(existing);
        }
        this.mailboxes.insert(record);
        return true;
      });
    });
  }

  async getMailbox(address: string, nowMs: number): Promise<MailboxRecord | undefined> {
    const row = this.mailboxes.live(address, nowMs);
    return row && mailboxRecordOf(row);
  }

  /**
   * Writes the batch's record into the message log: durable once this returns. The rows reach
   * SQLite within `commitIntervalMs`, or sooner when a request needs them.
   */
  append(batch: readonly NewMessage[], nowMs: number): Promise<AppendResult[]> {
    // Ids in hand (nearly always): the record is written in this call, no promise hop before it.
    if (!this.ids.covered(batch.length)) {
      return this.ids.ensure(batch.length).then(() => this.appendNow(batch, nowMs));
    }
    try {
      return Promise.resolve(this.appendNow(batch, nowMs));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** append() once the batch's ids are covered by a committed reservation. */
  private appendNow(batch: readonly NewMessage[], nowMs: number): AppendResult[] {
    let next = this.ids.next;
    const rows: AppendedRow[] = [];
    // Keys first taken by this batch: by mailbox id and key, the id they stand for.
    let batchKeys: Map<string, number> | undefined;
    const outcome = batch.map((message): AppendResult => {
      const box = this.mailboxes.live(message.mailbox, nowMs);
      if (!box) return { missingMailbox: true };
      const dedup = message.dedup;
      if (dedup !== undefined) {
        const original =
          this.sendKeys.lookup(box.id, dedup.key, nowMs) ?? batchKeys?.get(`${box.id}\u0000${dedup.key}`);
        if (original !== undefined) return { id: original, duplicate: true };
      }
      const row: AppendedRow = {
        id: message.dueMs !== undefined ? -1 : next++,
        mbox: box.id,
        priority: priorityRank[message.priority],
        key: message.key ?? null,
        tags: message.tags ? JSON.stringify(message.tags) : null,
        header: message.header ?? null,
        payload: message.payload,
        createdMs: message.sentMs,
        expiresMs: message.expiresMs ?? null,
        dueMs: message.dueMs ?? null,
      };
      if (dedup !== undefined) {
        row.dedup = dedup;
        batchKeys ??= new Map();
        batchKeys.set(`${box.id}\u0000${dedup.key}`, row.id);
      }
      rows.push(row);
      return { id: row.id };
    });
    if (rows.length === 0) return outcome;
    // One compact copy of the group (the record the log writes): rows hold views of it from here
    // on, not of the socket's read buffer.
    const encoded = encodeAppendedRows(rows, RECORD_HEADER, this.records.take);
    rows.forEach((row, i) => {
      row.payload = encoded.payloads[i];
      row.header = encoded.headers[i];
    });
    try {
      this.space.checkRoomFor(encoded.bytes.length);
      this.log?.append(rows, encoded);
    } catch (err) {
      this.space.noteFailure(err);
      throw StorageError.from(err, "cannot store the message");
    }
    this.ids.advanceTo(next);
    // Only once the record is in the log: a SEND that failed leaves its key free for the retry.
    if (batchKeys !== undefined) {
      for (const row of rows)
        if (row.dedup) this.sendKeys.remember(row.mbox, row.dedup.key, row.id, row.dedup.untilMs);
    }
    // Delayed ones are not readable until they are due.
    this.reads.stored(rows.filter((row) => row.dueMs === null));
    this.pacer.appended(rows);
    return outcome;
  }

  async nextMessageId(mailbox: string): Promise<number> {
    return this.mailboxes.row(mailbox) ? this.ids.next : 0;
  }

  async firstIdCreatedAtOrAfter(mailbox: string, createdMs: number): Promise<number> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.row(mailbox);
      if (!box) return 0;
      return this.stmt.messages.firstIdFrom.get(box.id, createdMs)?.msg_id ?? this.ids.next;
    });
  }

  read(mailbox: string, start: StartPosition, options: ReadOptions): Promise<StoredMessage[]> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, options.nowMs);
      if (!box) return [];
      return takeByPriority(options.limit, options.maxBytes, (rank, remaining) =>
        this.reads.classMessages(
          box.id,
          rank,
          start.fromId,
          options.nowMs,
          start.fromCreatedMs ?? 0,
          remaining,
        ),
      );
    });
  }

  async hasGroup(mailbox: string, group: string): Promise<boolean> {
    const box = this.mailboxes.row(mailbox);
    return box !== undefined && this.claims.exists(box.id, group);
  }

  // The store's requests that only return their turn's promise are not async functions: an async
  // function returning a promise settles a tick later, through one more promise.

  /** Leases the next messages to a group (see GroupClaims). */
  claim(mailbox: string, group: string, options: ClaimOptions): Promise<StoredMessage[]> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, options.nowMs);
      return box ? this.claims.claim(box.id, group, options) : [];
    });
  }

  /**
   * As claim, a new (or reset) group starting at the next msg_id, read in the same turn; a
   * missing mailbox claims nothing (see OneTripRequests). With it the engine asks nothing about
   * the mailbox or the group before a group FETCH or an ACK, only after an empty answer.
   */
  claimFromNext(
    mailbox: string,
    group: string,
    options: Omit<ClaimOptions, "start">,
  ): Promise<StoredMessage[]> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, options.nowMs);
      if (!box) return [];
      // Field by field, not spread: a spread grown by a field is a costly copy on every FETCH.
      const { limit, maxBytes, nowMs, reset, leaseMs, member, policy } = options;
      const start = { fromId: this.ids.next };
      return this.claims.claim(box.id, group, {
        limit,
        maxBytes,
        nowMs,
        start,
        reset,
        leaseMs,
        member,
        policy,
      });
    });
  }

  ack(mailbox: string, group: string, msgId: number, nowMs: number): Promise<boolean> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, nowMs);
      return box ? this.claims.ack(box.id, group, msgId, nowMs) : false;
    });
  }

  nak(mailbox: string, group: string, msgId: number, options: NakOptions): Promise<NakResult> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, options.nowMs);
      return box ? this.claims.nak(box.id, group, msgId, options) : { found: false, deadLetter: false };
    });
  }

  async groupLeases(
    mailbox: string,
    group: string,
    nowMs: number,
    limit: number,
  ): Promise<GroupLeaseReport | undefined> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, nowMs);
      return box && this.claims.leaseReport(box.id, group, nowMs, limit);
    });
  }

  async releaseMemberLeases(
    mailbox: string,
    group: string,
    member: string | undefined,
    nowMs: number,
  ): Promise<number | undefined> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, nowMs);
      return box && this.claims.releaseMember(box.id, group, member, nowMs);
    });
  }

  async deadLetters(nowMs: number, limit: number): Promise<DeadLetter[]> {
    return this.pacer.turn(() => {
      const letters: DeadLetter[] = [];
      for (const held of this.claims.deadLetters(nowMs, limit)) {
        const box = this.stmt.mailboxes.byId.get(held.mbox);
        if (!box || !isLive(box, nowMs)) continue;
        letters.push(
          deadLetterOf({
            ...held,
            mailbox: box.address,
            reason: held.reason ?? null,
            deadLetter: box.dead_letter,
            owner: box.owner,
          }),
        );
      }
      return letters;
    });
  }

  async settleDeadLetters(
    letters: readonly Pick<DeadLetter, "mailbox" | "group" | "message">[],
    nowMs: number,
  ): Promise<void> {
    return this.pacer.turn(() => {
      for (const { mailbox, group, ids } of lettersByGroup(letters)) {
        const box = this.mailboxes.live(mailbox, nowMs);
        if (box) this.claims.settleDeadLetters(box.id, group, ids, nowMs);
      }
    });
  }

  async query(mailbox: string, options: StoreQuery): Promise<StoredMessage[]> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(mailbox, options.nowMs);
      if (!box || options.limit <= 0) return [];
      const where = ["mbox = @mbox", "priority = @priority", "(expires_ms IS NULL OR expires_ms > @now)"];
      if (options.key !== undefined) where.push("msg_key = @key");
      if (options.createdFromMs !== undefined) where.push("created_ms >= @from");
      if (options.beforeId !== undefined) where.push("msg_id < @before");
      if (options.tags !== undefined) {
        where.push(
          "tags IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(tags) WHERE value IN (SELECT value FROM json_each(@tags)))",
        );
      }
      // One walk per priority class down its index, newest first, then merged by id.
      const statement = this.db
        .prepare<unknown[], RawMessageRow>(
          `SELECT ${MESSAGE_READ_COLUMNS} FROM messages WHERE ${where.join(" AND ")} ORDER BY msg_id DESC LIMIT @limit`,
        )
        .raw();
      const params = {
        mbox: box.id,
        now: options.nowMs,
        key: options.key,
        from: options.createdFromMs,
        before: options.beforeId,
        tags: options.tags ? JSON.stringify(options.tags) : undefined,
        limit: options.limit,
      };
      const ranks = options.priority === undefined ? RANKS : [priorityRank[options.priority]];
      const rows = ranks.flatMap((priority) => statement.all({ ...params, priority }).map(messageRowOf));
      rows.sort((a, b) => b.msg_id - a.msg_id);
      return this.reads.messagesOf(rows.slice(0, options.limit).reverse());
    });
  }

  async deleteMessage(mailbox: string, msgId: number): Promise<boolean> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.row(mailbox);
      if (!box) return false;
      const deleted = this.pacer.committed(() => {
        this.stmt.groups.removeDeliveriesOfMessage.run(box.id, msgId);
        return this.stmt.messages.remove.get(box.id, msgId);
      });
      // Only once the delete is committed: a failed one leaves the message leased as it was.
      this.claims.forgetMessage(box.id, msgId);
      if (deleted) {
        this.released([deleted]);
        this.reads.deleted([msgId]);
      }
      return deleted !== undefined;
    });
  }

  async promoteDue(nowMs: number): Promise<string[]> {
    return this.pacer.turn(() => {
      let next = this.ids.next;
      const touched = () => {
        const addresses = new Set<string>();
        for (const row of this.stmt.delayed.due.all(nowMs)) {
          this.stmt.delayed.remove.run(row.id);
          const box = this.stmt.mailboxes.byId.get(row.mbox);
          if (!box) continue;
          // Before its row: reads of the class stop trusting memory below it even if this fails.
          this.reads.promoted(row.mbox, row.priority, next);
          this.rows.insertMessage(row, next++, nowMs);
          addresses.add(box.address);
        }
        return [...addresses];
      };
      // What the promoted rows replace by key is told once committed (see endReplaced).
      const outcome = this.pacer.committed(touched);
      this.ids.advanceTo(next);
      return outcome;
    });
  }

  async nextDueMs(): Promise<number | undefined> {
    return this.pacer.turn(() => {
      return this.stmt.delayed.nextDue.get()?.due ?? undefined;
    });
  }

  async purgeExpired(nowMs: number): Promise<PurgeResult> {
    return this.pacer.turn(() => {
      const { result, expiredMessages } = this.pacer.committed(() => {
        const expired = this.stmt.mailboxes.expired.all(nowMs);
        for (const row of expired) this.dropMailbox(row);
        const expiredMessages = this.stmt.messages.expire.all(nowMs);
        this.released(expiredMessages);
        const messages = expiredMessages.length;
        this.stmt.sendKeys.expire.run(nowMs);
        this.sendKeys.sweep(nowMs);
        return { result: { mailboxes: expired.map((row) => row.address), messages }, expiredMessages };
      });
      // Only once committed, as for a DELETE: their leases end with them.
      for (const row of expiredMessages) this.claims.forgetMessage(row.mbox, row.msg_id);
      this.reads.deleted(expiredMessages.map((row) => row.msg_id));
      return result;
    });
  }

  async mailboxStats(nowMs: number, options: MailboxStatsOptions): Promise<MailboxStats[]> {
    return this.pacer.turn(() => this.stats.mailboxStats(nowMs, options));
  }

  async totals(nowMs: number): Promise<StoreTotals> {
    return this.pacer.turn(() => this.stats.totals(nowMs));
  }

  async mailboxOwners(nowMs: number, examples: number): Promise<OwnedMailboxes[]> {
    return this.pacer.turn(() => this.stats.mailboxOwners(nowMs, examples));
  }

  async groupStats(address: string, nowMs: number): Promise<GroupStats[] | undefined> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(address, nowMs);
      return box && this.stats.groupStats(box.id, nowMs);
    });
  }

  async deleteMailbox(address: string, nowMs: number): Promise<boolean> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(address, nowMs);
      if (!box) return false;
      this.pacer.committed(() => this.dropMailbox(box));
      return true;
    });
  }

  async purgeMailbox(address: string, nowMs: number, filter?: PurgeFilter): Promise<number | undefined> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(address, nowMs);
      if (!box) return undefined;
      if (!purgesAll(filter)) return this.purgeMatching(box.id, filter as PurgeFilter);
      return this.pacer.committed(() => {
        // Ids are not reused after a restart: the store persists a reserved range ahead of them.
        const dropped = this.stmt.messages.removeOf.all(box.id);
        this.released(dropped);
        this.stmt.delayed.removeOf.run(box.id);
        this.stmt.groups.removeDeliveriesOf.run(box.id);
        this.claims.forgetMailbox(box.id);
        this.reads.emptied(box.id);
        return dropped.length;
      });
    });
  }

  async resetGroup(address: string, group: string, fromId: number, nowMs: number): Promise<boolean> {
    return this.pacer.turn(() => {
      const box = this.mailboxes.live(address, nowMs);
      if (!box || !this.claims.exists(box.id, group)) return false;
      // A reset claim of nothing: the group's row and deliveries start over, its leases go.
      const start = { fromId };
      this.claims.claim(box.id, group, { start, reset: true, limit: 0, maxBytes: 0, nowMs, leaseMs: 0 });
      // A claim joins the deferred transaction; an operator's reset must outlive a crash.
      this.pacer.settle();
      return true;
    });
  }

  /**
   * Messages replaced by key (by a SEND's row, on the worker or here, or by a promoted delayed
   * one), once the delete is committed: as for a DELETE, their leases end and reads forget them.
   */
  private endReplaced(replaced: readonly ReplacedMessage[]): void {
    for (const { mbox, msgId } of replaced) this.claims.forgetMessage(mbox, msgId);
    this.reads.deleted(replaced.map(({ msgId }) => msgId));
  }

  /** Deletes the stored messages of a mailbox that match `filter`, with their deliveries. */
  private purgeMatching(mbox: number, filter: PurgeFilter): number {
    const { where, params } = purgeWhere(filter);
    const dropped = this.pacer.committed(() => {
      const rows = this.db
        .prepare<Record<string, unknown>, LocatedRow & { msg_id: number }>(
          `DELETE FROM messages WHERE mbox = @mbox${where} RETURNING msg_id, seg, seg_at, seg_len`,
        )
        .all({ ...params, mbox });
      for (const row of rows) this.stmt.groups.removeDeliveriesOfMessage.run(mbox, row.msg_id);
      return rows;
    });
    // Only once committed, as for one DELETE: a failed purge leaves the leases as they were.
    for (const row of dropped) this.claims.forgetMessage(mbox, row.msg_id);
    this.released(dropped);
    this.reads.deleted(dropped.map((row) => row.msg_id));
    return dropped.length;
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.pacer.close();
    await this.upkeep.close();
    if (!this.db.open) return;
    try {
      this.pacer.settle();
      // Every row is committed: the next start may continue from the exact id (without the
      // mark, say on a full disk, it continues from the reservation, which is safe too).
      try {
        this.pacer.atomically(() => this.ids.markClean());
      } catch {}
    } finally {
      this.log?.close();
      this.db.close();
      this.ownerLock?.close();
    }
  }

  /** Opens (or starts) the message log, first writing what a crash left out of the database. */
  private openLog(options: SqliteStoreOptions): MessageLog {
    let opened: ReturnType<typeof MessageLog.open>;
    try {
      opened = MessageLog.open(this.db, options.dataDir, {
        sync: options.sync === "full",
        segmentBytes: options.logSegmentBytes,
        onCorrupt: (err) => {
          this.corruptRecords++;
          options.onCorruptRecord?.(err);
        },
      });
    } catch (err) {
      throw StorageError.from(err, `cannot open the message log in ${options.dataDir}`);
    }
    const { log, replay, legacy, legacyJournal } = opened;
    const replaying = new MessageRowWriter(this.db, (located) => located && log.released(located), true);
    this.db.transaction(() => {
      replaying.writeAppended(legacy);
      replaying.writeAppended(replay);
      log.saveApplied();
    })();
    if (legacyJournal) unlinkSync(legacyJournal);
    return log;
  }

  /** Counts messages removed from the database out of the log segments they point into. */
  private released(rows: readonly (LocatedRow | undefined)[]): void {
    for (const row of rows) {
      const located = row && locationOf(row);
      if (located) this.log?.released(located);
    }
  }

  /** Deletes a mailbox with everything it holds (call in a transaction). */
  private dropMailbox(row: MailboxRow): void {
    this.released(this.stmt.messages.removeOf.all(row.id));
    this.stmt.delayed.removeOf.run(row.id);
    this.stmt.groups.removeOf.run(row.id);
    this.stmt.groups.removeDeliveriesOf.run(row.id);
    this.stmt.sendKeys.removeOf.run(row.id);
    this.sendKeys.forgetMailbox(row.id);
    this.mailboxes.remove(row);
    this.reads.forgetMailbox(row.id);
    this.claims.forgetMailbox(row.id);
  }
}
