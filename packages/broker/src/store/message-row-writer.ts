import type Database from "better-sqlite3";
import type { AppendedRow, SpanLocation } from "./appended-rows.js";
import { PACKED_FIELDS, type PackedRows, packRows } from "./packed-rows.js";

/** A message row as `messages` and `delayed` hold it (priority as its rank). */
export interface MessageValues {
  mbox: number;
  priority: number;
  msg_key: string | null;
  tags: string | null;
  header: Uint8Array | null;
  payload: Uint8Array;
  expires_ms: number | null;
}

/** Columns a message row is written with; header and payload are empty when seg says where they are in the log. */
export const MESSAGE_COLUMNS =
  "msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms, seg, seg_at, seg_len";

/**
 * MESSAGE_COLUMNS as reads select them: header and payload only where the row holds them, NULL
 * where seg points into the log (better-sqlite3 makes a Buffer of every blob, even an empty one).
 */
export const MESSAGE_READ_COLUMNS = MESSAGE_COLUMNS.replace(
  "header, payload",
  "CASE WHEN seg IS NULL THEN header END, CASE WHEN seg IS NULL THEN payload END",
);

/** A message as read with MESSAGE_READ_COLUMNS. */
export interface MessageRow extends LocatedRow {
  priority: number;
  msg_key: string | null;
  tags: string | null;
  header: Buffer | null;
  /** Null when the payload is in the log. */
  payload: Buffer | null;
  created_ms: number;
  expires_ms: number | null;
}

/** MESSAGE_READ_COLUMNS as a statement in raw mode returns them: the values in column order. */
export type RawMessageRow = [
  number,
  number,
  string | null,
  string | null,
  Buffer | null,
  Buffer | null,
  number,
  number | null,
  number | null,
  number | null,
  number | null,
];

/**
 * The row of raw MESSAGE_READ_COLUMNS values. Reads of many messages use raw mode: better-sqlite3
 * builds an object row with one named property set per column through V8's API, which took
 * most of a FETCH's time; an array and this literal cost a fraction of that.
 */
export function messageRowOf(v: RawMessageRow): MessageRow {
  return {
    msg_id: v[0],
    priority: v[1],
    msg_key: v[2],
    tags: v[3],
    header: v[4],
    payload: v[5],
    created_ms: v[6],
    expires_ms: v[7],
    seg: v[8],
    seg_at: v[9],
    seg_len: v[10],
  };
}
/**
 * The columns a class read selects where rows point into the log: neither the priority (the
 * class read asks for one) nor header and payload (in the log); fewer values for better-sqlite3
 * to make per row. A row that holds its bytes itself is read with MESSAGE_READ_COLUMNS.
 */
export const LOCATED_READ_COLUMNS = "msg_id, msg_key, tags, created_ms, expires_ms, seg, seg_at, seg_len";

/** LOCATED_READ_COLUMNS as a statement in raw mode returns them. */
export type RawLocatedRow = [
  number,
  string | null,
  string | null,
  number,
  number | null,
  number | null,
  number | null,
  number | null,
];

/** The row of raw LOCATED_READ_COLUMNS values read from the class `rank` (see messageRowOf). */
export function locatedMessageRowOf(v: RawLocatedRow, rank: number): MessageRow {
  return {
    msg_id: v[0],
    priority: rank,
    msg_key: v[1],
    tags: v[2],
    header: null,
    payload: null,
    created_ms: v[3],
    expires_ms: v[4],
    seg: v[5],
    seg_at: v[6],
    seg_len: v[7],
  };
}

const PLACEHOLDERS = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
/** A plain row (see packRows): no compaction key or tags, its header and payload in the log; four values fewer to bind. */
const LOGGED_PLACEHOLDERS = "(?, ?, ?, NULL, NULL, NULL, x'', ?, ?, ?, ?, ?)";
/** The payload column of a row whose payload is in the log. */
export const EMPTY = Buffer.alloc(0);

/** A message that a newer one with its key replaced: deleted with its deliveries in the same commit. */
export interface ReplacedMessage {
  mbox: number;
  msgId: number;
}

/** Told of each message replaced by a newer one with its key, with where its bytes were in the log. */
export type OnReplaced = (located: SpanLocation | undefined, msgId: number, mbox: number) => void;

/**
 * Keyless messages are inserted this many to a statement: binding and stepping one statement per
 * row costs more per row than a statement shared by many.
 */
const ROWS_PER_INSERT = 32;

/**
 * Writes stored messages into SQLite: keyless ones several to a statement,
 * keyed ones one by one after removing the message they replace, delayed ones
 * into `delayed`.
 */
export class MessageRowWriter {
  private readonly insertOne;
  /** Multi-row inserts by row count, prepared when first needed. */
  private readonly insertMany = new Map<number, Database.Statement>();
  private readonly insertPrefix: string = `INSERT INTO messages (mbox, ${MESSAGE_COLUMNS}) VALUES `;
  private readonly idByKey;
  private readonly deleteMessage;
  private readonly deleteDeliveriesOf;
  private readonly insertDelayed;
  private readonly rememberKey;
  /** Bound values of the shared insert, reused so a batch allocates one array. */
  private readonly values: unknown[] = [];

  constructor(
    private readonly db: Database.Database,
    private readonly onReplaced: OnReplaced,
    /**
     * Replace a row with the same msg_id instead of failing: for a replay, whose records may
     * include copies of messages whose rows exist (a compaction cut short, see MessageLog).
     */
    replaceRows = false,
  ) {
    if (replaceRows) this.insertPrefix = `INSERT OR REPLACE INTO messages (mbox, ${MESSAGE_COLUMNS}) VALUES `;
    this.insertOne = db.prepare(this.insertPrefix + PLACEHOLDERS);
    this.idByKey = db.prepare<[number, string], LocatedRow>(
      "SELECT msg_id, seg, seg_at, seg_len FROM messages WHERE mbox = ? AND msg_key = ?",
    );
    this.deleteMessage = db.prepare("DELETE FROM messages WHERE mbox = ? AND msg_id = ?");
    this.deleteDeliveriesOf = db.prepare("DELETE FROM deliveries WHERE mbox = ? AND msg_id = ?");
    this.insertDelayed = db.prepare(
      "INSERT INTO delayed (mbox, due_ms, priority, msg_key, tags, header, payload, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    );
    // A key whose window passed is taken over by the new message (see SendKeys). The later window
    // wins whatever the order rows are written in: packed rows go before the others of a batch.
    this.rememberKey = db.prepare(
      `INSERT INTO send_keys (mbox, id_key, msg_id, until_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (mbox, id_key) DO UPDATE SET msg_id = excluded.msg_id, until_ms = excluded.until_ms
       WHERE excluded.until_ms >= send_keys.until_ms`,
    );
  }

  /**
   * Writes SEND rows (call inside a transaction): the plain ones several to a statement, then the
   * others in order (keyed ones replace by key in send order; plain rows have no key to clash with).
   */
  writeAppended(rows: readonly AppendedRow[]): void {
    this.writePacked(packRows(rows));
  }

  /** writeAppended for rows already split and packed (see packRows and PendingRows). */
  writePacked({ packed, keys, others }: PackedRows): void {
    this.insertPacked(packed);
    if (keys.length > 0) this.rememberPackedKeys(packed, keys);
    for (const row of others) {
      if (row.dedup !== undefined) this.rememberKey.run(row.mbox, row.dedup.key, row.id, row.dedup.untilMs);
      if (row.dueMs === null) {
        this.insertMessage(valuesOf(row), row.id, row.createdMs, row.located);
        continue;
      }
      this.insertDelayed.run(
        row.mbox,
        row.dueMs,
        row.priority,
        row.key,
        row.tags,
        row.header,
        row.payload,
        row.expiresMs,
      );
    }
  }

  /** Inserts the plain rows packed by packRows, several to a statement. */
  private insertPacked(packed: Float64Array): void {
    const rows = packed.length / PACKED_FIELDS;
    for (let first = 0; first < rows; first += ROWS_PER_INSERT) {
      const count = Math.min(ROWS_PER_INSERT, rows - first);
      const values = this.values;
      values.length = 0;
      for (let at = first * PACKED_FIELDS; at < (first + count) * PACKED_FIELDS; at += PACKED_FIELDS) {
        const expires = packed[at + 4];
        values.push(packed[at], packed[at + 1], packed[at + 2], packed[at + 3]);
        values.push(Number.isNaN(expires) ? null : expires, packed[at + 5], packed[at + 6], packed[at + 7]);
      }
      // Spread, not one array: better-sqlite3 reads arguments directly, array elements one lookup each.
      this.loggedInsert(count).run(...values);
    }
  }

  /** Remembers the idempotency keys of packed rows: `keys` in the order of the rows that have one. */
  private rememberPackedKeys(packed: Float64Array, keys: readonly string[]): void {
    let next = 0;
    for (let at = 0; at < packed.length; at += PACKED_FIELDS) {
      const untilMs = packed[at + 8];
      if (!Number.isNaN(untilMs)) this.rememberKey.run(packed[at], keys[next++], packed[at + 1], untilMs);
    }
  }

  /** Inserts one message under its id, first removing the message it replaces by key. */
  insertMessage(row: MessageValues, id: number, createdMs: number, located?: SpanLocation): void {
    if (row.msg_key !== null) {
      const previous = this.idByKey.get(row.mbox, row.msg_key);
      if (previous) {
        this.deleteMessage.run(row.mbox, previous.msg_id);
        this.deleteDeliveriesOf.run(row.mbox, previous.msg_id);
        this.onReplaced(locationOf(previous), previous.msg_id, row.mbox);
      }
    }
    this.insertOne.run(
      row.mbox,
      id,
      row.priority,
      row.msg_key,
      row.tags,
      located ? null : row.header,
      located ? EMPTY : row.payload,
      createdMs,
      row.expires_ms,
      located?.segment ?? null,
      located?.offset ?? null,
      located?.length ?? null,
    );
  }

  /** The multi-row insert of `count` plain rows, prepared when first needed. */
  private loggedInsert(count: number): Database.Statement {
    let statement = this.insertMany.get(count);
    if (statement === undefined) {
      statement = this.db.prepare(this.insertPrefix + Array(count).fill(LOGGED_PLACEHOLDERS).join(", "));
      this.insertMany.set(count, statement);
    }
    return statement;
  }
}

function valuesOf(row: AppendedRow): MessageValues {
  return {
    mbox: row.mbox,
    priority: row.priority,
    msg_key: row.key,
    tags: row.tags,
    header: row.header,
    payload: row.payload,
    expires_ms: row.expiresMs,
  };
}

/** A message row's place in the log, as the seg columns hold it. */
export interface LocatedRow {
  msg_id: number;
  seg: number | null;
  seg_at: number | null;
  seg_len: number | null;
}

export function locationOf(row: LocatedRow): SpanLocation | undefined {
  if (row.seg === null) return undefined;
  return { segment: row.seg, offset: row.seg_at ?? 0, length: row.seg_len ?? 0 };
}
