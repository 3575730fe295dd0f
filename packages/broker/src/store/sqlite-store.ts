import { mkdirSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { PRIORITIES, priorityRank } from "@mq9/protocol";
import Database from "better-sqlite3";
import { type AppendedRow, encodeAppendedRows } from "./appended-rows.js";
import { FreeSpace } from "./free-space.js";
import { GroupLeases } from "./group-leases.js";
import { IdReservation } from "./id-reservation.js";
import { ApplierFailed, LogApplier } from "./log-applier.js";
import { type MessageBytes, MessageLog } from "./message-log.js";
import {
  EMPTY,
  type LocatedRow,
  locationOf,
  MESSAGE_READ_COLUMNS,
  type MessageRow,
  MessageRowWriter,
  messageRowOf,
  type RawMessageRow,
} from "./message-row-writer.js";
import { RecentMessages } from "./recent-messages.js";
import { CorruptRecordError } from "./record-checks.js";
import { RECORD_HEADER } from "./record-framing.js";
import { RecordSlab } from "./record-slab.js";
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA, SQLITE_SCHEMA_VERSION } from "./sqlite-schema.js";
import { isOutOfSpace, StorageError } from "./storage-error.js";
import type {
  AppendResult,
  ClaimOptions,
  MailboxRecord,
  NewMessage,
  PurgeResult,
  QueryOptions,
  ReadOptions,
  StartPosition,
  Store,
  StoredMessage,
} from "./store.js";
import type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  StoreInspection,
  StoreTotals,
} from "./store-inspection.js";
import type { CheckpointReply } from "./wal-checkpoint-worker.js";
import { WalCheckpointer } from "./wal-checkpointer.js";

export type SyncMode = "normal" | "full";

/** Whether the store can write: "full" while writes fail for lack of space. */
export type StorageState = "ok" | "full";

/** Free bytes SENDs leave to SQLite (see FreeSpace); below it the store counts as full. */
const DEFAULT_RESERVE_BYTES = 8 * 1024 * 1024;
/** How long a write that failed for lack of space keeps the state "full" (unless another fails). */
const SPACE_SHORT_MS = 5_000;

/** What `/metrics` shows of the message log. */
export interface StoreLogStatus {
  segments: number;
  /** Header and payload bytes of the stored messages (deleted ones' bytes are not counted). */
  messageBytes: number;
  /** SENDs in the log whose rows are not in SQLite yet. */
  rowsWaiting: number;
  /** Records of the message log found corrupt since the store opened. */
  corruptRecords: number;
  /** Bytes of the message log's segment files. */
  logBytes: number;
  /** Bytes of the SQLite WAL file. */
  walBytes: number;
  /** Unused pages in the SQLite database file, in bytes (reused, or returned by incremental vacuum). */
  dbFreeBytes: number;
  /**
   * Bytes on disk that hold nothing live and are given back on the reclaim schedule: segment
   * bytes past the live messages, the WAL, and free database pages.
   */
  reclaimableBytes: number;
}

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
}

const DEFAULT_COMMIT_INTERVAL_MS = 25;
/**
 * Enough for consumers that keep up (a few thousand 1 KiB messages); the cache holds a buffer of
 * this size for the store's life (see RecentMessages).
 */
const DEFAULT_RECENT_MESSAGE_BYTES = 4 * 1024 * 1024;
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;
/** A WAL file past this size is emptied (see truncateWal): it stays near this bound. */
export const WAL_TRUNCATE_BYTES = 32 * 1024 * 1024;
/** A fully copied WAL file past this size is emptied too (cheap then: nothing is left to copy). */
const WAL_IDLE_TRUNCATE_BYTES = 4 * 1024 * 1024;
/** Free database pages are looked at this often, and given back past VACUUM_FREE_BYTES, a step at a time. */
const VACUUM_INTERVAL_MS = 1000;
const VACUUM_FREE_BYTES = 8 * 1024 * 1024;
const VACUUM_STEP_BYTES = 16 * 1024 * 1024;
/** More messages than one append is ever given (SendBatcher's largest batch). */
const MAX_BATCH = 65_536;
/** Rows after which the open transaction is committed without waiting for the interval. */
const MAX_UNCOMMITTED_ROWS = 4096;

/**
 * Takes the directory's owner lock: an exclusive lock on a small SQLite file,
 * held until the connection closes (also by the OS when the process dies).
 */
function lockDataDir(file: string): Database.Database {
  const lock = new Database(file, { timeout: 200 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    // It never holds data: no rollback journal file beside it.
    lock.pragma("journal_mode = MEMORY");
    lock.exec("BEGIN EXCLUSIVE; COMMIT");
    return lock;
  } catch (err) {
    lock.close();
    throw err;
  }
}

interface MailboxRow {
  id: number;
  address: string;
  ttl_s: number;
  description: string;
  created_ms: number;
  expires_ms: number | null;
  owner: string | null;
}

interface DelayedRow
  extends Omit<MessageRow, "msg_id" | "created_ms" | "seg" | "seg_at" | "seg_len" | "payload"> {
  payload: Buffer;
  id: number;
  mbox: number;
  due_ms: number;
}

interface GroupRow {
  cursor0: number;
  cursor1: number;
  cursor2: number;
  next_batch: number;
}

const RANKS = [0, 1, 2] as const;

/**
 * Message rows as reads return them, headers and payloads taken from `log` where the rows point
 * there (neighbouring ones in one read).
 */
function toStored(rows: readonly MessageRow[], log: MessageLog | undefined): StoredMessage[] {
  const located = rows.map(locationOf);
  const bytes = log ? log.readMany(located) : [];
  return rows.map((row, i) => {
    const read = bytes[i];
    if (read instanceof CorruptRecordError) throw corruptMessage(row.msg_id, read);
    return storedMessage(row, read ?? { header: row.header, payload: row.payload ?? EMPTY });
  });
}

/** The error a read of a corrupt message answers: which one, and how to get past it. */
function corruptMessage(msgId: number, cause: CorruptRecordError): StorageError {
  return new StorageError(
    `message ${msgId} is corrupt on disk (${cause.message}); it is not served: delete it (MSG.DELETE) to read past it, or restore the data directory from a backup`,
    "STORE_CORRUPT",
    { cause },
  );
}

function storedMessage(row: MessageRow, { header, payload }: MessageBytes): StoredMessage {
  return {
    id: row.msg_id,
    priority: PRIORITIES[row.priority],
    key: row.msg_key ?? undefined,
    tags: row.tags ? (JSON.parse(row.tags) as string[]) : undefined,
    header: header ?? undefined,
    payload,
    createdMs: row.created_ms,
    expiresMs: row.expires_ms ?? undefined,
  };
}

/** The error of a SEND refused to keep the last free bytes for SQLite (see FreeSpace). */
function outOfSpace(space: FreeSpace): Error {
  const err = new Error(
    `ENOSPC: less than ${Math.round(space.reserve / 2 ** 20)} MiB free, kept for the database`,
  ) as Error & { code: string };
  err.code = "ENOSPC";
  return err;
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function isLive(row: MailboxRow, nowMs: number): boolean {
  return row.expires_ms === null || row.expires_ms > nowMs;
}

/**
 * Walks the priority classes, critical first, taking each class's rows (FIFO)
 * until `limit` or the payload byte budget is reached (always at least one).
 */
function takeByPriority(
  limit: number,
  maxBytes: number,
  messagesOf: (rank: number, remaining: number) => StoredMessage[],
): StoredMessage[] {
  const taken: StoredMessage[] = [];
  let bytes = 0;
  for (const rank of RANKS) {
    const remaining = limit - taken.length;
    if (remaining <= 0 || (bytes > 0 && bytes >= maxBytes)) break;
    for (const message of messagesOf(rank, remaining)) {
      if (bytes > 0 && bytes + message.payload.length > maxBytes) return taken;
      bytes += message.payload.length;
      taken.push(message);
    }
  }
  return taken;
}

/**
 * The embedded store: one SQLite file in WAL mode, owned by this process
 * (exclusive lock), so mailbox metadata can be cached in memory.
 */
export class SqliteStore implements Store, StoreInspection {
  private readonly db: Database.Database;
  private readonly mailboxCache = new Map<string, MailboxRow>();
  private readonly stmt;
  private readonly rows: MessageRowWriter;
  /**
   * SENDs in the message log not yet written to SQLite: written in one go by the next commit or by the
   * first request that reads messages, several rows to a statement.
   */
  private pending: AppendedRow[] = [];
  /** One transaction wrapper for every change: better-sqlite3 builds a costly new one per transaction() call. */
  private readonly runAtomically: (change: () => unknown) => unknown;
  /** What each consumer group has in flight, by mailbox id and group name (memory only). */
  private readonly inFlight = new Map<number, Map<string, GroupLeases>>();
  /** The id the next stored message gets (one sequence for all mailboxes). */
  private nextId = 0;
  /** Where SENDs are made durable and their payloads kept (absent for an in-memory store). */
  private log?: MessageLog;
  /**
   * Writes the rows of logged SENDs on a worker thread; absent for an in-memory store, or
   * after the worker failed, when they are written here (see `pending`).
   */
  private applier?: LogApplier;
  private uncommittedRows = 0;
  private commitTimer?: NodeJS.Timeout;
  private readonly commitIntervalMs: number;
  /** Held open for the store's life: a second broker on the same directory is refused. */
  private readonly ownerLock?: Database.Database;
  private readonly checkpointer?: WalCheckpointer;
  private readonly recent: RecentMessages;
  /** Memory for the log records SENDs are encoded into. */
  private readonly records = new RecordSlab();
  /** Per mailbox, the highest id ever stored in each priority class (at least; deletions do not lower it). */
  private readonly newestIds = new Map<number, number[]>();
  private corruptRecords = 0;
  /** The stored high-water mark of msg_ids. */
  private readonly ids: IdReservation;
  private reservingIds?: Promise<void>;
  private truncatingWal = false;
  /** When a write last failed for lack of space; cleared once there is room again. */
  private spaceShortSinceMs?: number;
  private readonly freeSpace?: FreeSpace;
  private readonly file: string;
  private readonly pageSize: number;
  private lastVacuumMs = 0;
  /** Databases made before this version have no incremental vacuum (it needs a full VACUUM to turn on). */
  private incrementalVacuum = false;

  constructor(options: SqliteStoreOptions) {
    const file = options.dataDir === ":memory:" ? ":memory:" : join(options.dataDir, "mq9.db");
    this.file = file;

    const synchronous = options.sync === "full" ? "FULL" : "NORMAL";
    try {
      if (file !== ":memory:") {
        mkdirSync(options.dataDir, { recursive: true });
        this.ownerLock = lockDataDir(join(options.dataDir, "mq9.lock"));
      }
      this.db = new Database(file, { timeout: 200 });
      this.db.pragma("journal_mode = WAL");
      this.db.pragma(`synchronous = ${synchronous}`);
      // Checkpoints run on a worker (below); a reset WAL is cut back to this size.
      this.db.pragma("wal_autocheckpoint = 0");
      this.db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      this.createOrCheckSchema();
    } catch (err) {
      this.ownerLock?.close();
      throw StorageError.from(err, `cannot open the store in ${options.dataDir}`);
    }
    if (file !== ":memory:") {
      this.freeSpace = new FreeSpace(options.dataDir, options.reserveBytes ?? DEFAULT_RESERVE_BYTES);
    }
    this.commitIntervalMs = options.commitIntervalMs ?? DEFAULT_COMMIT_INTERVAL_MS;
    this.recent = new RecentMessages(options.recentMessageBytes ?? DEFAULT_RECENT_MESSAGE_BYTES);
    const db = this.db;
    this.runAtomically = db.transaction((change: () => unknown) => change());
    this.pageSize = db.pragma("page_size", { simple: true }) as number;
    this.stmt = {
      begin: db.prepare("BEGIN"),
      freePages: db.prepare<[], { n: number }>("SELECT freelist_count AS n FROM pragma_freelist_count"),
      commit: db.prepare("COMMIT"),
      mailboxByAddress: db.prepare<[string], MailboxRow>("SELECT * FROM mailboxes WHERE address = ?"),
      insertMailbox: db.prepare(
        "INSERT INTO mailboxes (address, ttl_s, description, created_ms, expires_ms, owner) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      deleteMessage: db.prepare<[number, number], LocatedRow>(
        "DELETE FROM messages WHERE mbox = ? AND msg_id = ? RETURNING msg_id, seg, seg_at, seg_len",
      ),
      deleteDeliveriesOf: db.prepare("DELETE FROM deliveries WHERE mbox = ? AND msg_id = ?"),
      firstIdFrom: db.prepare<[number, number], { msg_id: number }>(
        "SELECT min(msg_id) AS msg_id FROM messages WHERE mbox = ? AND created_ms >= ?",
      ),
      // Walks the class's index in id order (it holds the expiry and creation time to filter on).
      classRows: db
        .prepare<[number, number, number, number, number, number], RawMessageRow>(
          `SELECT ${MESSAGE_READ_COLUMNS} FROM messages
           WHERE mbox = ? AND priority = ? AND msg_id >= ? AND (expires_ms IS NULL OR expires_ms > ?) AND created_ms >= ?
           ORDER BY msg_id LIMIT ?`,
        )
        .raw(),
      newestByClass: db.prepare<[number], { priority: number; id: number }>(
        "SELECT priority, max(msg_id) AS id FROM messages WHERE mbox = ? GROUP BY priority",
      ),
      group: db.prepare<[number, string], GroupRow>(
        "SELECT cursor0, cursor1, cursor2, next_batch FROM groups WHERE mbox = ? AND name = ?",
      ),
      upsertGroup: db.prepare(
        `INSERT INTO groups (mbox, name, cursor0, cursor1, cursor2, next_batch) VALUES (@mbox, @name, @c0, @c1, @c2, @batch)
         ON CONFLICT (mbox, name) DO UPDATE SET cursor0 = @c0, cursor1 = @c1, cursor2 = @c2, next_batch = @batch`,
      ),
      clearDeliveries: db.prepare("DELETE FROM deliveries WHERE mbox = ? AND grp = ?"),
      ackedOf: db.prepare<[number, string], { msg_id: number; priority: number }>(
        "SELECT msg_id, priority FROM deliveries WHERE mbox = ? AND grp = ? AND acked = 1",
      ),
      // Rows of an older version that kept leases in the table.
      dropLeaseRows: db.prepare("DELETE FROM deliveries WHERE mbox = ? AND grp = ? AND acked = 0"),
      unackedClass: db
        .prepare<[number, number, number, number, number, string, number], RawMessageRow>(
          `SELECT ${MESSAGE_READ_COLUMNS} FROM messages m
           WHERE m.mbox = ? AND m.priority = ? AND m.msg_id >= ? AND (m.expires_ms IS NULL OR m.expires_ms > ?)
             AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.mbox = ? AND d.grp = ? AND d.msg_id = m.msg_id AND d.acked = 1)
           ORDER BY m.msg_id LIMIT ?`,
        )
        .raw(),
      insertAcked: db.prepare(
        `INSERT INTO deliveries (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked)
         VALUES (?, ?, ?, ?, 0, 0, 0, 1) ON CONFLICT (mbox, grp, msg_id) DO UPDATE SET acked = 1`,
      ),
      priorityOf: db.prepare<[number, number], { priority: number }>(
        "SELECT priority FROM messages WHERE mbox = ? AND msg_id = ?",
      ),
      firstUnacked: db.prepare<[number, number, number, number, number, string], { msg_id: number | null }>(
        `SELECT min(m.msg_id) AS msg_id FROM messages m
         WHERE m.mbox = ? AND m.priority = ? AND m.msg_id >= ? AND (m.expires_ms IS NULL OR m.expires_ms > ?)
           AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.mbox = ? AND d.grp = ? AND d.msg_id = m.msg_id AND d.acked = 1)`,
      ),
      maxAcked: db.prepare<[number, string, number], { msg_id: number | null }>(
        "SELECT max(msg_id) AS msg_id FROM deliveries WHERE mbox = ? AND grp = ? AND priority = ? AND acked = 1",
      ),
      pruneDeliveries: db.prepare(
        "DELETE FROM deliveries WHERE mbox = ? AND grp = ? AND priority = ? AND msg_id < ?",
      ),
      setCursors: db.prepare(
        "UPDATE groups SET cursor0 = ?, cursor1 = ?, cursor2 = ? WHERE mbox = ? AND name = ?",
      ),
      dueDelayed: db.prepare<[number], DelayedRow>(
        "SELECT * FROM delayed WHERE due_ms <= ? ORDER BY due_ms, id",
      ),
      deleteDelayed: db.prepare("DELETE FROM delayed WHERE id = ?"),
      nextDue: db.prepare<[], { due: number | null }>("SELECT min(due_ms) AS due FROM delayed"),
      mailboxById: db.prepare<[number], MailboxRow>("SELECT * FROM mailboxes WHERE id = ?"),
      expiredMailboxes: db.prepare<[number], MailboxRow>(
        "SELECT * FROM mailboxes WHERE expires_ms IS NOT NULL AND expires_ms <= ?",
      ),
      expireMessages: db.prepare<[number], LocatedRow>(
        "DELETE FROM messages WHERE expires_ms IS NOT NULL AND expires_ms <= ? RETURNING msg_id, seg, seg_at, seg_len",
      ),
      dropMessagesOf: db.prepare<[number], LocatedRow>(
        "DELETE FROM messages WHERE mbox = ? RETURNING msg_id, seg, seg_at, seg_len",
      ),
    };
    this.rows = new MessageRowWriter(db, (located) => {
      if (located) this.log?.released(located);
    });
    if (file !== ":memory:") {
      this.openLog(options);
      this.checkpointer = WalCheckpointer.start({ file, synchronous }, (reply) => this.onCheckpoint(reply));
      if (!this.checkpointer) this.db.pragma("wal_autocheckpoint = 1000");
      if (options.rowsOnWorker !== false) {
        this.applier = this.startApplier(file, synchronous, options.onRowWorkerFailed);
      }
    }
    const stored = this.db
      .prepare<[], { value: number }>("SELECT value FROM meta WHERE name = 'next_msg_id'")
      .get();
    const newest = this.db.prepare<[], { id: number | null }>("SELECT max(msg_id) AS id FROM messages").get();
    this.ids = new IdReservation(this.db);
    this.nextId = this.ids.startingId(Math.max(stored?.value ?? 0, (newest?.id ?? -1) + 1));
    try {
      this.reserveIdsNow();
    } catch (err) {
      // Nothing is given an id until a reservation is committed (the first SEND tries again).
      this.noteFailure(err);
    }
  }

  /** The message log's size and the rows still to be written to SQLite; undefined in memory. */
  logStatus(): StoreLogStatus | undefined {
    if (!this.log) return undefined;
    const log = this.log.status();
    const walBytes = fileSize(`${this.file}-wal`);
    const dbFreeBytes = this.db.open ? this.stmt.freePages.get()!.n * this.pageSize : 0;
    return {
      ...log,
      rowsWaiting: this.applier?.waiting ?? this.pending.length,
      corruptRecords: this.corruptRecords,
      walBytes,
      dbFreeBytes,
      reclaimableBytes: Math.max(0, log.logBytes - log.messageBytes) + walBytes + dbFreeBytes,
    };
  }

  async createMailbox(record: MailboxRecord, nowMs: number): Promise<boolean> {
    return this.sqlTurn(() => {
      return this.committed(() => {
        const existing = this.mailboxRow(record.address);
        if (existing) {
          if (isLive(existing, nowMs)) return false;
          this.dropMailbox(existing);
        }
        this.stmt.insertMailbox.run(
          record.address,
          record.ttlSeconds,
          record.desc,
          record.createdMs,
          record.expiresMs ?? null,
          record.owner ?? null,
        );
        return true;
      });
    });
  }

  async getMailbox(address: string, nowMs: number): Promise<MailboxRecord | undefined> {
    const row = this.liveMailbox(address, nowMs);
    if (!row) return undefined;
    return {
      address: row.address,
      ttlSeconds: row.ttl_s,
      desc: row.description,
      createdMs: row.created_ms,
      expiresMs: row.expires_ms ?? undefined,
      owner: row.owner ?? undefined,
    };
  }

  /**
   * Writes the batch's record into the message log: durable once this returns. The rows reach
   * SQLite within `commitIntervalMs`, or sooner when a request needs them.
   */
  async append(batch: readonly NewMessage[], nowMs: number): Promise<AppendResult[]> {
    while (!this.ids.covers(this.nextId, batch.length)) await this.reserveIds();
    if (this.ids.runningLow(this.nextId)) void this.reserveIds().catch(() => {});
    let next = this.nextId;
    const rows: AppendedRow[] = [];
    const outcome = batch.map((message): AppendResult => {
      const box = this.liveMailbox(message.mailbox, nowMs);
      if (!box) return { missingMailbox: true };
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
      if (this.freeSpace && !this.freeSpace.allows(encoded.bytes.length)) throw outOfSpace(this.freeSpace);
      this.log?.append(rows, encoded);
    } catch (err) {
      this.noteFailure(err);
      throw StorageError.from(err, "cannot store the message");
    }
    this.nextId = next;
    // Delayed ones are not readable until they are due.
    const readable = rows.filter((row) => row.dueMs === null);
    for (const row of readable) this.stored(row);
    this.recent.keep(readable);
    if (this.applier && this.log) {
      this.applier.appendedTo(this.log.end, rows);
      return outcome;
    }
    for (const row of rows) this.pending.push(row);
    this.uncommittedRows += rows.length;
    if (this.uncommittedRows < MAX_UNCOMMITTED_ROWS) this.scheduleSettle();
    else {
      try {
        this.settle();
      } catch (err) {
        // The SENDs are durable in the log: their rows are written once there is room.
        this.noteFailure(err);
        this.scheduleSettle();
      }
    }
    return outcome;
  }

  async nextMessageId(mailbox: string): Promise<number> {
    return this.mailboxRow(mailbox) ? this.nextId : 0;
  }

  async firstIdCreatedAtOrAfter(mailbox: string, createdMs: number): Promise<number> {
    return this.sqlTurn(() => {
      const box = this.mailboxRow(mailbox);
      if (!box) return 0;
      return this.stmt.firstIdFrom.get(box.id, createdMs)?.msg_id ?? this.nextId;
    });
  }

  async read(mailbox: string, start: StartPosition, options: ReadOptions): Promise<StoredMessage[]> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(mailbox, options.nowMs);
      if (!box) return [];
      return takeByPriority(options.limit, options.maxBytes, (rank, remaining) =>
        this.classMessages(box.id, rank, start.fromId, options.nowMs, start.fromCreatedMs ?? 0, remaining),
      );
    });
  }

  async hasGroup(mailbox: string, group: string): Promise<boolean> {
    const box = this.mailboxRow(mailbox);
    return box !== undefined && this.stmt.group.get(box.id, group) !== undefined;
  }

  /**
   * Leases the next messages to a group. Leases live in memory (see GroupLeases):
   * a claim writes nothing but a new group's row, and a crash only delivers the
   * unACKed messages again (at least once).
   */
  async claim(mailbox: string, group: string, options: ClaimOptions): Promise<StoredMessage[]> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(mailbox, options.nowMs);
      if (!box) return [];
      // With the worker writing SEND rows, this connection holds no transaction between turns.
      if (!this.applier) this.beginDeferred();
      const stored = this.stmt.group.get(box.id, group);
      // A reset starts over from `start`, keeping only the batch numbering.
      const existing = options.reset ? undefined : stored;
      const takeAndLease = (cursors: number[], leases: GroupLeases) => {
        const taken = this.claimable(box.id, group, cursors, leases, options);
        leases.lease(
          taken.map((m) => ({ id: m.id, rank: priorityRank[m.priority] })),
          options.nowMs + options.leaseMs,
        );
        return taken;
      };
      if (existing) {
        const leases = this.leasesOf(box.id, group, existing);
        const cursors = [existing.cursor0, existing.cursor1, existing.cursor2];
        // A claim that fails (a record that cannot be read) leases nothing.
        return leases.change(() => this.atomically(() => takeAndLease(cursors, leases)));
      }
      const from = options.start.fromId;
      const cursors = [from, from, from];
      const batch = stored?.next_batch ?? 0;
      const leases = new GroupLeases(cursors, batch);
      const taken = this.atomically(() => {
        if (options.reset) this.stmt.clearDeliveries.run(box.id, group);
        this.stmt.upsertGroup.run({ mbox: box.id, name: group, c0: from, c1: from, c2: from, batch });
        return takeAndLease(cursors, leases);
      });
      // Kept only once the group's row is written: a failed claim leaves the group as it was.
      this.groupsOf(box.id).set(group, leases);
      return taken;
    });
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
      this.stmt.dropLeaseRows.run(mbox, group);
      const acked = this.stmt.ackedOf.all(mbox, group).map((r) => ({ id: r.msg_id, rank: r.priority }));
      leases = new GroupLeases([state.cursor0, state.cursor1, state.cursor2], state.next_batch, acked);
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
        return this.classMessages(
          mbox,
          rank,
          Math.max(cursors[rank], leases.delivered[rank] + 1),
          nowMs,
          0,
          remaining,
        );
      }
      const active = leases.activeIds(rank, nowMs);
      const rows = this.stmt.unackedClass
        .all(mbox, rank, cursors[rank], nowMs, mbox, group, remaining + active.size)
        .map(messageRowOf);
      const found = toStored(rows.filter((row) => !active.has(row.msg_id)).slice(0, remaining), this.log);
      if (found.length < remaining) leases.closeGap(rank, new Set(found.map((m) => m.id)), nowMs);
      return found;
    });
  }

  /** A class's live messages from `fromId` in id order, the bytes of recent ones from memory, of the rest from the log. */
  private classMessages(
    mbox: number,
    rank: number,
    fromId: number,
    nowMs: number,
    fromCreatedMs: number,
    limit: number,
  ): StoredMessage[] {
    // A consumer that has caught up asks for ids past the newest: no query needed.
    if (fromId > this.newestIdsOf(mbox)[rank]) return [];
    const rows = this.stmt.classRows.all(mbox, rank, fromId, nowMs, fromCreatedMs, limit).map(messageRowOf);
    const messages: (StoredMessage | undefined)[] = rows.map((row) => this.recent.get(row.msg_id));
    const cold = rows.filter((_, i) => messages[i] === undefined);
    if (cold.length === 0) return messages as StoredMessage[];
    // The rest with their bytes from the log, neighbouring ones in one read.
    const read = toStored(cold, this.log);
    let next = 0;
    return messages.map((message) => message ?? read[next++]);
  }

  private newestIdsOf(mbox: number): number[] {
    let newest = this.newestIds.get(mbox);
    if (!newest) {
      newest = [-1, -1, -1];
      for (const row of this.stmt.newestByClass.all(mbox)) newest[row.priority] = row.id;
      this.newestIds.set(mbox, newest);
    }
    return newest;
  }

  async ack(mailbox: string, group: string, msgId: number, nowMs: number): Promise<boolean> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(mailbox, nowMs);
      if (!box) return false;
      const state = this.stmt.group.get(box.id, group);
      if (!state) return false;
      const cursors = [state.cursor0, state.cursor1, state.cursor2];
      const leases = this.leasesOf(box.id, group, state);
      const covered = leases.coveredBy(msgId);
      if (!covered) return leases.acked.has(msgId) || this.isBelowCursor(box.id, msgId, cursors);
      // An ACK whose write fails is undone in memory as well: its messages stay leased, and come
      // back once the lease runs out (an error reply means nothing changed).
      return leases.change(() =>
        this.committed(() => {
          leases.release(covered.keys());
          const moved = leases.cursorsAfterRelease(cursors);
          const next = [...cursors];
          for (let rank = 0; rank < 3; rank++) {
            // ACKs the cursor does not pass are written: they must outlive a restart.
            const stays = moved[rank] ?? Number.NEGATIVE_INFINITY;
            for (const [id, r] of covered) {
              if (r !== rank || id < stays) continue;
              this.stmt.insertAcked.run(box.id, group, id, rank);
              leases.addAcked(id, rank);
            }
            next[rank] = moved[rank] ?? this.firstUnackedFrom(box.id, group, rank, cursors[rank], nowMs);
            if (next[rank] !== cursors[rank] && leases.dropAckedBelow(rank, next[rank])) {
              this.stmt.pruneDeliveries.run(box.id, group, rank, next[rank]);
            }
          }
          if (next.some((cursor, rank) => cursor !== cursors[rank])) {
            this.stmt.setCursors.run(next[0], next[1], next[2], box.id, group);
          }
          return true;
        }),
      );
    });
  }

  async query(mailbox: string, options: QueryOptions): Promise<StoredMessage[]> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(mailbox, options.nowMs);
      if (!box || options.limit <= 0) return [];
      const where = ["mbox = @mbox", "priority = @priority", "(expires_ms IS NULL OR expires_ms > @now)"];
      if (options.key !== undefined) where.push("msg_key = @key");
      if (options.createdFromMs !== undefined) where.push("created_ms >= @from");
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
        tags: options.tags ? JSON.stringify(options.tags) : undefined,
        limit: options.limit,
      };
      const rows = RANKS.flatMap((priority) => statement.all({ ...params, priority }).map(messageRowOf));
      rows.sort((a, b) => b.msg_id - a.msg_id);
      return toStored(rows.slice(0, options.limit).reverse(), this.log);
    });
  }

  async deleteMessage(mailbox: string, msgId: number): Promise<boolean> {
    return this.sqlTurn(() => {
      const box = this.mailboxRow(mailbox);
      if (!box) return false;
      const deleted = this.committed(() => {
        this.stmt.deleteDeliveriesOf.run(box.id, msgId);
        return this.stmt.deleteMessage.get(box.id, msgId);
      });
      // Only once the delete is committed: a failed one leaves the message leased as it was.
      for (const leases of this.inFlight.get(box.id)?.values() ?? []) leases.forget(msgId);
      if (deleted) this.released([deleted]);
      return deleted !== undefined;
    });
  }

  async promoteDue(nowMs: number): Promise<string[]> {
    return this.sqlTurn(() => {
      let next = this.nextId;
      const touched = () => {
        const addresses = new Set<string>();
        for (const row of this.stmt.dueDelayed.all(nowMs)) {
          this.stmt.deleteDelayed.run(row.id);
          const box = this.stmt.mailboxById.get(row.mbox);
          if (!box) continue;
          this.rows.insertMessage(row, next, nowMs);
          this.raiseNewest(row.mbox, row.priority, next++);
          addresses.add(box.address);
        }
        return [...addresses];
      };
      const outcome = this.committed(touched);
      this.nextId = next;
      return outcome;
    });
  }

  async nextDueMs(): Promise<number | undefined> {
    return this.sqlTurn(() => {
      return this.stmt.nextDue.get()?.due ?? undefined;
    });
  }

  async purgeExpired(nowMs: number): Promise<PurgeResult> {
    return this.sqlTurn(() => {
      return this.committed(() => {
        const expired = this.stmt.expiredMailboxes.all(nowMs);
        for (const row of expired) this.dropMailbox(row);
        const expiredMessages = this.stmt.expireMessages.all(nowMs);
        this.released(expiredMessages);
        const messages = expiredMessages.length;
        return { mailboxes: expired.map((row) => row.address), messages };
      });
    });
  }

  async mailboxStats(nowMs: number, options: MailboxStatsOptions): Promise<MailboxStats[]> {
    return this.sqlTurn(() => {
      const match = options.exact ? "address = ?" : "instr(address, ?) > 0";
      const boxes = this.db
        .prepare<[number, string, number], MailboxRow>(
          `SELECT * FROM mailboxes WHERE (expires_ms IS NULL OR expires_ms > ?) AND ${match} ORDER BY address LIMIT ?`,
        )
        .all(nowMs, options.search ?? "", options.limit);
      if (boxes.length === 0) return [];
      const ids = JSON.stringify(boxes.map((box) => box.id));
      const inBoxes = "mbox IN (SELECT value FROM json_each(?))";
      const classes = this.db
        .prepare<
          [string, number],
          { mbox: number; priority: number; n: number; bytes: number; oldest: number }
        >(
          `SELECT mbox, priority, count(*) AS n, min(created_ms) AS oldest,
             sum(coalesce(seg_len, length(payload) + coalesce(length(header), 0))) AS bytes
           FROM messages WHERE ${inBoxes} AND (expires_ms IS NULL OR expires_ms > ?) GROUP BY mbox, priority`,
        )
        .all(ids, nowMs);
      const countsOf = (table: string) =>
        new Map(
          this.db
            .prepare<[string], { mbox: number; n: number }>(
              `SELECT mbox, count(*) AS n FROM ${table} WHERE ${inBoxes} GROUP BY mbox`,
            )
            .all(ids)
            .map((row) => [row.mbox, row.n]),
        );
      const delayed = countsOf("delayed");
      const groups = countsOf("groups");
      return boxes.map((box): MailboxStats => {
        const depth = { critical: 0, urgent: 0, normal: 0 };
        let bytes = 0;
        let oldestMs: number | undefined;
        for (const row of classes) {
          if (row.mbox !== box.id) continue;
          depth[PRIORITIES[row.priority]] = row.n;
          bytes += row.bytes;
          oldestMs = oldestMs === undefined ? row.oldest : Math.min(oldestMs, row.oldest);
        }
        return {
          address: box.address,
          ttlSeconds: box.ttl_s,
          desc: box.description,
          createdMs: box.created_ms,
          expiresMs: box.expires_ms ?? undefined,
          depth,
          bytes,
          oldestMs,
          delayed: delayed.get(box.id) ?? 0,
          groups: groups.get(box.id) ?? 0,
        };
      });
    });
  }

  async totals(nowMs: number): Promise<StoreTotals> {
    return this.sqlTurn(() => {
      const mailboxes = this.db
        .prepare<[number], { n: number }>(
          "SELECT count(*) AS n FROM mailboxes WHERE expires_ms IS NULL OR expires_ms > ?",
        )
        .get(nowMs);
      const messages = this.db
        .prepare<[number], { n: number; bytes: number | null }>(
          `SELECT count(*) AS n, sum(coalesce(seg_len, length(payload) + coalesce(length(header), 0))) AS bytes
           FROM messages WHERE expires_ms IS NULL OR expires_ms > ?`,
        )
        .get(nowMs);
      return { mailboxes: mailboxes?.n ?? 0, messages: messages?.n ?? 0, bytes: messages?.bytes ?? 0 };
    });
  }

  async groupStats(address: string, nowMs: number): Promise<GroupStats[] | undefined> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(address, nowMs);
      if (!box) return undefined;
      const rows = this.db
        .prepare<[number], GroupRow & { name: string }>("SELECT * FROM groups WHERE mbox = ? ORDER BY name")
        .all(box.id);
      const unacked = this.db.prepare<[number, number, number, number, number, string], { n: number }>(
        `SELECT count(*) AS n FROM messages m
         WHERE m.mbox = ? AND m.priority = ? AND m.msg_id >= ? AND (m.expires_ms IS NULL OR m.expires_ms > ?)
           AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.mbox = ? AND d.grp = ? AND d.msg_id = m.msg_id AND d.acked = 1)`,
      );
      return rows.map((row) => {
        const cursors = [row.cursor0, row.cursor1, row.cursor2];
        const leases = this.inFlight.get(box.id)?.get(row.name);
        let lag = 0;
        let leased = 0;
        for (const rank of RANKS) {
          lag += unacked.get(box.id, rank, cursors[rank], nowMs, box.id, row.name)?.n ?? 0;
          leased += leases?.activeIds(rank, nowMs).size ?? 0;
        }
        return { name: row.name, lag, leased };
      });
    });
  }

  async deleteMailbox(address: string, nowMs: number): Promise<boolean> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(address, nowMs);
      if (!box) return false;
      this.committed(() => this.dropMailbox(box));
      return true;
    });
  }

  async purgeMailbox(address: string, nowMs: number): Promise<number | undefined> {
    return this.sqlTurn(() => {
      const box = this.liveMailbox(address, nowMs);
      if (!box) return undefined;
      return this.committed(() => {
        // Ids are not reused after a restart: the store persists a reserved range ahead of them.
        const dropped = this.stmt.dropMessagesOf.all(box.id);
        this.released(dropped);
        this.db.prepare("DELETE FROM delayed WHERE mbox = ?").run(box.id);
        this.db.prepare("DELETE FROM deliveries WHERE mbox = ?").run(box.id);
        // Leases of purged messages mean nothing now; the groups rebuild theirs from the database.
        this.inFlight.delete(box.id);
        return dropped.length;
      });
    });
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.applier?.close();
    await this.checkpointer?.close();
    if (!this.db.open) return;
    try {
      this.settle();
      // Every row is committed: the next start may continue from the exact id (without the
      // mark, say on a full disk, it continues from the reservation, which is safe too).
      try {
        this.atomically(() => this.ids.markClean(this.nextId));
      } catch {}
    } finally {
      this.log?.close();
      this.db.close();
      this.ownerLock?.close();
    }
  }

  /** Raises the stored id reservation (see IdReservation) in a turn; one raise at a time. */
  private reserveIds(): Promise<void> {
    this.reservingIds ??= this.sqlTurn(() => this.reserveIdsNow())
      .catch((err) => {
        this.noteFailure(err);
        throw StorageError.from(err, "cannot store the message");
      })
      .finally(() => {
        this.reservingIds = undefined;
      });
    return this.reservingIds;
  }

  /** Commits a reservation of ids well past the next one (call in a turn). */
  private reserveIdsNow(): void {
    // Past what one append may take at once, so a raise always covers the batch that waited for it.
    const until = this.committed(() => this.ids.raise(this.nextId + MAX_BATCH));
    this.ids.raised(until);
  }

  private onCheckpoint(reply: CheckpointReply): void {
    if (!this.db.open) return;
    if (reply.type === "failed") {
      // Without the worker, SQLite checkpoints on this connection again.
      this.db.pragma("wal_autocheckpoint = 1000");
      return;
    }
    if (reply.type !== "checkpointed") return;
    // Past the bound; or idle with everything copied (a truncation costs little then), so an
    // idle broker does not keep a large WAL file.
    const idle = reply.copiedFrames === reply.walFrames && reply.walBytes > WAL_IDLE_TRUNCATE_BYTES;
    if (idle || reply.walBytes > WAL_TRUNCATE_BYTES) this.truncateWal();
  }

  /**
   * Empties the WAL file with a TRUNCATE checkpoint while no other connection writes: passive
   * checkpoints copy the WAL but never start it over while commits keep coming, so without
   * this it grew without bound under a stream of small commits (deletes, ACKs, expiry).
   */
  private truncateWal(): void {
    if (this.truncatingWal) return;
    const checkpointer = this.checkpointer;
    const applier = this.applier;
    this.truncatingWal = true;
    const truncated =
      checkpointer && applier
        ? applier.exclusive(() => checkpointer.truncate())
        : this.sqlTurn(() => {
            // This connection is the only writer: settle, then truncate here.
            this.settle();
            this.db.pragma("wal_checkpoint(TRUNCATE)");
          });
    void truncated
      .catch(() => {})
      .finally(() => {
        this.truncatingWal = false;
      });
  }

  /**
   * Runs `body`, synchronous SQL on this connection, once the database holds every SEND so far:
   * in a turn of the worker when there is one, else after writing the pending rows here.
   */
  private sqlTurn<T>(body: () => T): Promise<T> {
    if (this.applier) {
      return this.applier.turn(body).catch((err) => {
        // The worker failed and its rows are pending here now: run the body the other way.
        if (err instanceof ApplierFailed) return this.sqlTurn(body);
        this.noteFailure(err);
        throw err;
      });
    }
    try {
      this.applyPendingUnlessFull();
      return Promise.resolve(body());
    } catch (err) {
      this.noteFailure(err);
      return Promise.reject(err);
    }
  }

  /**
   * Writes the pending SENDs before a turn; when that fails for lack of space the turn runs
   * without them (its reads do not see them yet; they are durable in the log), so a full disk
   * does not stop reads.
   */
  private applyPendingUnlessFull(): void {
    try {
      this.applyPending();
    } catch (err) {
      if (!isOutOfSpace(err)) throw err;
      this.noteFailure(err);
    }
  }

  private startApplier(
    file: string,
    synchronous: "NORMAL" | "FULL",
    onFailed?: (err: Error) => void,
  ): LogApplier | undefined {
    const log = this.log;
    if (!log) return undefined;
    let lastCollectMs = 0;
    return LogApplier.start({ file, synchronous }, log.end, {
      intervalMs: this.commitIntervalMs,
      maxRows: MAX_UNCOMMITTED_ROWS,
      onApplied: (released) => {
        for (const located of released) log.released(located);
        this.checkpointer?.request();
        // Segments are looked at once a second at most: a turn of its own, while the worker rests.
        const now = Date.now();
        if (now - lastCollectMs < 1000) return;
        lastCollectMs = now;
        void this.sqlTurn(() => this.removeUnusedSegments()).catch(() => {});
      },
      writeHere: (rows, to) =>
        this.atomically(() => {
          this.rows.writePacked(rows);
          log.saveApplied(to);
        }),
      onFailed: (err) => {
        // Its rows are written here from now on, starting with those it did not commit.
        this.applier = undefined;
        this.pending = log.unappliedRows();
        this.uncommittedRows = this.pending.length;
        this.scheduleSettle();
        onFailed?.(err);
      },
    });
  }

  /** Opens (or starts) the message log, first writing what a crash left out of the database. */
  private openLog(options: SqliteStoreOptions): void {
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
    // Set before the rows are written: their places in the log are counted as they go in.
    this.log = log;
    const replaying = new MessageRowWriter(this.db, (located) => located && log.released(located), true);
    this.atomically(() => {
      replaying.writeAppended(legacy);
      replaying.writeAppended(replay);
      log.saveApplied();
    });
    if (legacyJournal) unlinkSync(legacyJournal);
  }

  /** Opens the transaction SENDs collect in, committed after the interval at the latest. */
  private beginDeferred(): void {
    if (!this.db.inTransaction) this.stmt.begin.run();
    this.scheduleSettle();
  }

  private scheduleSettle(): void {
    if (this.commitTimer !== undefined) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      try {
        this.settle();
      } catch {
        // The next change commits, or reports the failure to its caller.
      }
    }, this.commitIntervalMs);
    this.commitTimer.unref();
  }

  /** Writes the pending SENDs into the open transaction, so that SQL sees them. */
  private applyPending(): void {
    if (this.pending.length === 0) return;
    this.beginDeferred();
    const rows = this.pending;
    try {
      this.atomically(() => this.rows.writeAppended(rows));
    } catch (err) {
      // They stay pending (and in the log): the next commit tries again.
      throw StorageError.from(err, "cannot store the message");
    }
    this.pending = [];
  }

  /** Commits the open transaction, recording that the log's records are now in the database. */
  private settle(): void {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    this.applyPending();
    if (!this.db.inTransaction) return;
    this.log?.saveApplied();
    this.stmt.commit.run();
    this.uncommittedRows = 0;
    this.checkpointer?.request();
    this.removeUnusedSegments();
  }

  /**
   * Deletes (or compacts) log segments no row needs, and gives free database pages back to the
   * file system (incremental vacuum, at most once a second); call with every row committed.
   */
  private removeUnusedSegments(): void {
    this.log?.removeUnused((change) => this.atomically(change));
    const now = Date.now();
    if (now - this.lastVacuumMs < VACUUM_INTERVAL_MS || this.db.inTransaction) return;
    this.lastVacuumMs = now;
    const free = this.stmt.freePages.get()!.n;
    if (free * this.pageSize > VACUUM_FREE_BYTES && this.incrementalVacuum) {
      this.db.pragma(`incremental_vacuum(${Math.ceil(VACUUM_STEP_BYTES / this.pageSize)})`);
    }
  }

  /** Notes a message as stored: the newest id of its class, and its bytes' place in the log. */
  private stored(row: AppendedRow): void {
    this.raiseNewest(row.mbox, row.priority, row.id);
    if (row.located) this.log?.stored(row.located, row.id);
  }

  private raiseNewest(mbox: number, rank: number, id: number): void {
    const newest = this.newestIdsOf(mbox);
    if (id > newest[rank]) newest[rank] = id;
  }

  /** Counts messages removed from the database out of the log segments they point into. */
  private released(rows: readonly (LocatedRow | undefined)[]): void {
    for (const row of rows) {
      const located = row && locationOf(row);
      if (located) this.log?.released(located);
    }
  }

  /** Runs a change that is durable once this returns, committed together with pending SENDs. */
  private committed<T>(change: () => T): T {
    this.applyPending();
    const sendsPending = this.db.inTransaction;
    const result = this.atomically(change);
    // Outside the deferred transaction the change committed by itself; inside it, commit it all.
    if (sendsPending) {
      this.settle();
    } else {
      this.checkpointer?.request();
      // The change may have removed the last messages of a segment (settle looks after that otherwise).
      this.removeUnusedSegments();
    }
    return result;
  }

  /** Runs `change` in a transaction, or in a savepoint when one is open already. */
  private atomically<T>(change: () => T): T {
    return this.runAtomically(change) as T;
  }

  private mailboxRow(address: string): MailboxRow | undefined {
    let row = this.mailboxCache.get(address);
    if (!row) {
      row = this.stmt.mailboxByAddress.get(address);
      if (row) this.mailboxCache.set(address, row);
    }
    return row;
  }

  private liveMailbox(address: string, nowMs: number): MailboxRow | undefined {
    const row = this.mailboxRow(address);
    return row && isLive(row, nowMs) ? row : undefined;
  }

  private isBelowCursor(mbox: number, msgId: number, cursors: number[]): boolean {
    const row = this.stmt.priorityOf.get(mbox, msgId);
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

  private createOrCheckSchema(): void {
    const version = this.db.pragma("user_version", { simple: true }) as number;
    const empty =
      this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get() === undefined;
    // Set before the first table: free pages can then be given back without a full VACUUM.
    if (empty) this.db.pragma("auto_vacuum = INCREMENTAL");
    let at = version;
    if (!empty) {
      // Each step in its own transaction with the version it reaches, so a crash leaves a known version.
      while (at < SQLITE_SCHEMA_VERSION && SQLITE_MIGRATIONS[at] !== undefined) {
        const step = SQLITE_MIGRATIONS[at];
        this.db.transaction(() => {
          step(this.db);
          this.db.pragma(`user_version = ${at + 1}`);
        })();
        at++;
      }
    }
    if (!empty && at !== SQLITE_SCHEMA_VERSION) {
      throw new StorageError(
        `the store was written by another mq9 version (format ${version}, this one reads ${SQLITE_SCHEMA_VERSION}); move the data directory aside`,
        "STORE_FORMAT",
      );
    }
    // Nothing is written when the tables are there (a broker must start on a full disk).
    if (empty || version !== SQLITE_SCHEMA_VERSION || !this.hasCurrentSchema()) {
      this.db.exec(SQLITE_SCHEMA);
      this.db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`);
    }
    this.incrementalVacuum = this.db.pragma("auto_vacuum", { simple: true }) === 2;
  }

  /** Whether every table and index of SQLITE_SCHEMA exists (and the one it drops does not). */
  private hasCurrentSchema(): boolean {
    const names = new Set(
      this.db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
        .all()
        .map((row) => row.name),
    );
    const wanted = [...SQLITE_SCHEMA.matchAll(/CREATE (?:UNIQUE )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)/g)].map(
      (m) => m[1],
    );
    return wanted.every((name) => names.has(name)) && !names.has("messages_by_class");
  }

  /**
   * "full" while less than the reserve is free (SENDs are refused), while the worker cannot
   * write its rows, or for a few seconds after a write failed for lack of space (a quota or a
   * file-size limit the free space does not show); "ok" otherwise. Looked at on each /healthz,
   * so an idle broker recovers too.
   */
  storageState(): StorageState {
    if (this.freeSpace && this.freeSpace.free() < this.freeSpace.reserve) return "full";
    if (this.applier?.stalledBy) return "full";
    const since = this.spaceShortSinceMs;
    if (since !== undefined && Date.now() - since < SPACE_SHORT_MS) return "full";
    this.spaceShortSinceMs = undefined;
    return "ok";
  }

  /** Notes a failed write: one for lack of space makes the storage state "full". */
  private noteFailure(err: unknown): void {
    if (isOutOfSpace(err) || isOutOfSpace((err as { cause?: unknown }).cause))
      this.spaceShortSinceMs = Date.now();
  }

  private dropMailbox(row: MailboxRow): void {
    this.released(this.stmt.dropMessagesOf.all(row.id));
    for (const table of ["delayed", "groups", "deliveries"]) {
      this.db.prepare(`DELETE FROM ${table} WHERE mbox = ?`).run(row.id);
    }
    this.db.prepare("DELETE FROM mailboxes WHERE id = ?").run(row.id);
    this.newestIds.delete(row.id);
    this.inFlight.delete(row.id);
    this.mailboxCache.delete(row.address);
  }
}
