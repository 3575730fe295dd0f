import type Database from "better-sqlite3";
import {
  LOCATED_READ_COLUMNS,
  type LocatedRow,
  MESSAGE_READ_COLUMNS,
  type MessageRow,
  type RawLocatedRow,
  type RawMessageRow,
} from "./message-row-writer.js";

/** A row of `mailboxes`. */
export interface MailboxRow {
  id: number;
  address: string;
  ttl_s: number;
  description: string;
  created_ms: number;
  expires_ms: number | null;
  owner: string | null;
  max_deliver: number | null;
  dead_letter: string | null;
}

/** A row of `delayed`: a message waiting for its due time, its bytes held inline. */
export interface DelayedRow
  extends Omit<MessageRow, "msg_id" | "created_ms" | "seg" | "seg_at" | "seg_len" | "payload"> {
  payload: Buffer;
  id: number;
  mbox: number;
  due_ms: number;
}

/** A row of `groups`: a consumer group's class cursors and its next batch number. */
export interface GroupRow {
  cursor0: number;
  cursor1: number;
  cursor2: number;
  next_batch: number;
  max_deliver: number | null;
  /** The backoff steps as JSON (milliseconds), or null. */
  backoff: string | null;
  dead_lettered: number;
}

/** The named parameters of `GroupStatements.upsert`. */
export interface GroupUpsert {
  mbox: number;
  name: string;
  c0: number;
  c1: number;
  c2: number;
  batch: number;
}

type Statement<Params extends unknown[], Row = unknown> = Database.Statement<Params, Row>;
type MinId = { msg_id: number | null };

export interface TransactionStatements {
  begin: Statement<[]>;
  commit: Statement<[]>;
}

export interface MailboxStatements {
  byAddress: Statement<[address: string], MailboxRow>;
  byId: Statement<[id: number], MailboxRow>;
  insert: Statement<
    [
      address: string,
      ttlS: number,
      description: string,
      createdMs: number,
      expiresMs: number | null,
      owner: string | null,
      maxDeliver: number | null,
      deadLetter: string | null,
    ]
  >;
  expired: Statement<[nowMs: number], MailboxRow>;
  remove: Statement<[id: number]>;
}

export interface MessageStatements {
  /** A class's live messages from an id on, in id order (the class index holds expiry and creation time). */
  classRows: Statement<
    [mbox: number, rank: number, fromId: number, nowMs: number, fromCreatedMs: number, limit: number],
    RawMessageRow
  >;
  /** classRows with LOCATED_READ_COLUMNS, for rows whose bytes are in the log. */
  classLocated: Statement<
    [mbox: number, rank: number, fromId: number, nowMs: number, fromCreatedMs: number, limit: number],
    RawLocatedRow
  >;
  newestByClass: Statement<[mbox: number], { priority: number; id: number }>;
  firstIdFrom: Statement<[mbox: number, createdMs: number], MinId>;
  priorityOf: Statement<[mbox: number, msgId: number], { priority: number }>;
  remove: Statement<[mbox: number, msgId: number], LocatedRow>;
  removeOf: Statement<[mbox: number], LocatedRow>;
  expire: Statement<[nowMs: number], LocatedRow & { mbox: number }>;
  /** The newest id any row holds (null in an empty store). */
  newestId: Statement<[], { id: number | null }>;
  /** The next id an mq9 version before the reservation stored. */
  storedNextId: Statement<[], { value: number }>;
}

export interface GroupStatements {
  get: Statement<[mbox: number, group: string], GroupRow>;
  upsert: Statement<[GroupUpsert]>;
  setCursors: Statement<[cursor0: number, cursor1: number, cursor2: number, mbox: number, group: string]>;
  removeOf: Statement<[mbox: number]>;
  clearDeliveries: Statement<[mbox: number, group: string]>;
  ackedOf: Statement<[mbox: number, group: string], { msg_id: number; priority: number }>;
  /** A class's live messages from the cursor that the group has not ACKed, in id order. */
  unackedClass: Statement<
    [mbox: number, rank: number, fromId: number, nowMs: number, mbox2: number, group: string, limit: number],
    RawMessageRow
  >;
  insertAcked: Statement<[mbox: number, group: string, msgId: number, rank: number]>;
  firstUnacked: Statement<
    [mbox: number, rank: number, fromId: number, nowMs: number, mbox2: number, group: string],
    MinId
  >;
  maxAcked: Statement<[mbox: number, group: string, rank: number], MinId>;
  pruneDeliveries: Statement<[mbox: number, group: string, rank: number, belowId: number]>;
  removeDeliveriesOfMessage: Statement<[mbox: number, msgId: number]>;
  removeDeliveriesOf: Statement<[mbox: number]>;
  setPolicy: Statement<[maxDeliver: number | null, backoff: string | null, mbox: number, group: string]>;
  /** Delivery counts written for messages delivered more than once (or NAKed), not ACKed. */
  countsOf: Statement<
    [mbox: number, group: string],
    { msg_id: number; delivery_count: number; reason: string | null }
  >;
  saveCount: Statement<
    [
      mbox: number,
      group: string,
      msgId: number,
      rank: number,
      untilMs: number,
      count: number,
      reason: string | null,
    ]
  >;
  removeCount: Statement<[mbox: number, group: string, msgId: number]>;
  addDeadLettered: Statement<[n: number, mbox: number, group: string]>;
  /** One message's row, for the dead-letter sweep. */
  messageAt: Statement<[mbox: number, msgId: number], RawMessageRow>;
}

export interface DelayedStatements {
  due: Statement<[nowMs: number], DelayedRow>;
  remove: Statement<[id: number]>;
  removeOf: Statement<[mbox: number]>;
  nextDue: Statement<[], { due: number | null }>;
}

export interface StatsStatements {
  groupsOf: Statement<[mbox: number], GroupRow & { name: string }>;
  unackedCount: Statement<
    [mbox: number, rank: number, fromId: number, nowMs: number, mbox2: number, group: string],
    { n: number; oldest: number | null }
  >;
  liveMailboxes: Statement<[nowMs: number], { n: number }>;
  liveMessages: Statement<[nowMs: number], { n: number; bytes: number | null }>;
}

/**
 * Every statement the embedded store prepares once, by the collaborator that runs it, each
 * with its parameter and row types spelled out (statements built per request, such as
 * QUERY's filters, are prepared where they are built).
 */
/** SENDs' idempotency keys (see SendKeys); the row writer writes them with the rows. */
export interface SendKeyStatements {
  /** Deletes the keys whose window has ended. */
  expire: Statement<[nowMs: number]>;
  removeOf: Statement<[mbox: number]>;
}

export interface SqliteStatements {
  transaction: TransactionStatements;
  sendKeys: SendKeyStatements;
  mailboxes: MailboxStatements;
  messages: MessageStatements;
  groups: GroupStatements;
  delayed: DelayedStatements;
  stats: StatsStatements;
  /** Unused pages of the database file. */
  freePages: Statement<[], { n: number }>;
}

/** A message is live until its expiry. */
const LIVE = "(expires_ms IS NULL OR expires_ms > ?)";
const UNACKED = `SELECT ${MESSAGE_READ_COLUMNS} FROM messages m
  WHERE m.mbox = ? AND m.priority = ? AND m.msg_id >= ? AND (m.expires_ms IS NULL OR m.expires_ms > ?)
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.mbox = ? AND d.grp = ? AND d.msg_id = m.msg_id AND d.acked = 1)`;

/** Prepares the catalogue on `db` (its schema must be in place). */
export function prepareStatements(db: Database.Database): SqliteStatements {
  return {
    transaction: { begin: db.prepare("BEGIN"), commit: db.prepare("COMMIT") },
    sendKeys: {
      expire: db.prepare("DELETE FROM send_keys WHERE until_ms <= ?"),
      removeOf: db.prepare("DELETE FROM send_keys WHERE mbox = ?"),
    },
    mailboxes: {
      byAddress: db.prepare("SELECT * FROM mailboxes WHERE address = ?"),
      byId: db.prepare("SELECT * FROM mailboxes WHERE id = ?"),
      insert: db.prepare(
        "INSERT INTO mailboxes (address, ttl_s, description, created_ms, expires_ms, owner, max_deliver, dead_letter) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      ),
      expired: db.prepare("SELECT * FROM mailboxes WHERE expires_ms IS NOT NULL AND expires_ms <= ?"),
      remove: db.prepare("DELETE FROM mailboxes WHERE id = ?"),
    },
    messages: {
      classRows: db
        .prepare<[number, number, number, number, number, number], RawMessageRow>(
          `SELECT ${MESSAGE_READ_COLUMNS} FROM messages WHERE mbox = ? AND priority = ? AND msg_id >= ? AND ${LIVE} AND created_ms >= ? ORDER BY msg_id LIMIT ?`,
        )
        .raw(),
      classLocated: db
        .prepare<[number, number, number, number, number, number], RawLocatedRow>(
          `SELECT ${LOCATED_READ_COLUMNS} FROM messages WHERE mbox = ? AND priority = ? AND msg_id >= ? AND ${LIVE} AND created_ms >= ? ORDER BY msg_id LIMIT ?`,
        )
        .raw(),
      newestByClass: db.prepare(
        "SELECT priority, max(msg_id) AS id FROM messages WHERE mbox = ? GROUP BY priority",
      ),
      firstIdFrom: db.prepare(
        "SELECT min(msg_id) AS msg_id FROM messages WHERE mbox = ? AND created_ms >= ?",
      ),
      priorityOf: db.prepare("SELECT priority FROM messages WHERE mbox = ? AND msg_id = ?"),
      remove: db.prepare(
        "DELETE FROM messages WHERE mbox = ? AND msg_id = ? RETURNING msg_id, seg, seg_at, seg_len",
      ),
      removeOf: db.prepare("DELETE FROM messages WHERE mbox = ? RETURNING msg_id, seg, seg_at, seg_len"),
      expire: db.prepare(
        "DELETE FROM messages WHERE expires_ms IS NOT NULL AND expires_ms <= ? RETURNING mbox, msg_id, seg, seg_at, seg_len",
      ),
      newestId: db.prepare("SELECT max(msg_id) AS id FROM messages"),
      storedNextId: db.prepare("SELECT value FROM meta WHERE name = 'next_msg_id'"),
    },
    groups: {
      get: db.prepare(
        "SELECT cursor0, cursor1, cursor2, next_batch, max_deliver, backoff, dead_lettered FROM groups WHERE mbox = ? AND name = ?",
      ),
      upsert: db.prepare(
        `INSERT INTO groups (mbox, name, cursor0, cursor1, cursor2, next_batch) VALUES (@mbox, @name, @c0, @c1, @c2, @batch)
         ON CONFLICT (mbox, name) DO UPDATE SET cursor0 = @c0, cursor1 = @c1, cursor2 = @c2, next_batch = @batch`,
      ),
      setCursors: db.prepare(
        "UPDATE groups SET cursor0 = ?, cursor1 = ?, cursor2 = ? WHERE mbox = ? AND name = ?",
      ),
      removeOf: db.prepare("DELETE FROM groups WHERE mbox = ?"),
      clearDeliveries: db.prepare("DELETE FROM deliveries WHERE mbox = ? AND grp = ?"),
      ackedOf: db.prepare("SELECT msg_id, priority FROM deliveries WHERE mbox = ? AND grp = ? AND acked = 1"),
      unackedClass: db
        .prepare<[number, number, number, number, number, string, number], RawMessageRow>(
          `${UNACKED} ORDER BY m.msg_id LIMIT ?`,
        )
        .raw(),
      insertAcked: db.prepare(
        `INSERT INTO deliveries (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked)
         VALUES (?, ?, ?, ?, 0, 0, 0, 1) ON CONFLICT (mbox, grp, msg_id) DO UPDATE SET acked = 1`,
      ),
      firstUnacked: db.prepare(
        UNACKED.replace(`SELECT ${MESSAGE_READ_COLUMNS}`, "SELECT min(m.msg_id) AS msg_id"),
      ),
      maxAcked: db.prepare(
        "SELECT max(msg_id) AS msg_id FROM deliveries WHERE mbox = ? AND grp = ? AND priority = ? AND acked = 1",
      ),
      pruneDeliveries: db.prepare(
        "DELETE FROM deliveries WHERE mbox = ? AND grp = ? AND priority = ? AND msg_id < ?",
      ),
      removeDeliveriesOfMessage: db.prepare("DELETE FROM deliveries WHERE mbox = ? AND msg_id = ?"),
      removeDeliveriesOf: db.prepare("DELETE FROM deliveries WHERE mbox = ?"),
      setPolicy: db.prepare("UPDATE groups SET max_deliver = ?, backoff = ? WHERE mbox = ? AND name = ?"),
      countsOf: db.prepare(
        "SELECT msg_id, delivery_count, reason FROM deliveries WHERE mbox = ? AND grp = ? AND acked = 0",
      ),
      saveCount: db.prepare(
        `INSERT INTO deliveries (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked, delivery_count, reason)
         VALUES (?, ?, ?, ?, 0, 0, ?, 0, ?, ?)
         ON CONFLICT (mbox, grp, msg_id) DO UPDATE SET lease_until_ms = excluded.lease_until_ms,
           delivery_count = excluded.delivery_count, reason = excluded.reason WHERE acked = 0`,
      ),
      removeCount: db.prepare(
        "DELETE FROM deliveries WHERE mbox = ? AND grp = ? AND msg_id = ? AND acked = 0",
      ),
      addDeadLettered: db.prepare(
        "UPDATE groups SET dead_lettered = dead_lettered + ? WHERE mbox = ? AND name = ?",
      ),
      messageAt: db
        .prepare<[number, number], RawMessageRow>(
          `SELECT ${MESSAGE_READ_COLUMNS} FROM messages WHERE mbox = ? AND msg_id = ?`,
        )
        .raw(),
    },
    delayed: {
      due: db.prepare("SELECT * FROM delayed WHERE due_ms <= ? ORDER BY due_ms, id"),
      remove: db.prepare("DELETE FROM delayed WHERE id = ?"),
      removeOf: db.prepare("DELETE FROM delayed WHERE mbox = ?"),
      nextDue: db.prepare("SELECT min(due_ms) AS due FROM delayed"),
    },
    stats: {
      groupsOf: db.prepare("SELECT * FROM groups WHERE mbox = ? ORDER BY name"),
      unackedCount: db.prepare(
        UNACKED.replace(
          `SELECT ${MESSAGE_READ_COLUMNS}`,
          "SELECT count(*) AS n, min(m.created_ms) AS oldest",
        ),
      ),
      liveMailboxes: db.prepare(`SELECT count(*) AS n FROM mailboxes WHERE ${LIVE}`),
      liveMessages: db.prepare(
        `SELECT count(*) AS n, sum(coalesce(seg_len, length(payload) + coalesce(length(header), 0))) AS bytes
         FROM messages WHERE ${LIVE}`,
      ),
    },
    freePages: db.prepare("SELECT freelist_count AS n FROM pragma_freelist_count"),
  };
}
