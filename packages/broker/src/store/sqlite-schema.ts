import type Database from "better-sqlite3";

/** Bumped whenever the layout below changes incompatibly. */
export const SQLITE_SCHEMA_VERSION = 6;

/**
 * Version 3 keeps a SEND's header and payload in the message log (seg, seg_at, seg_len) instead
 * of in the row; rows of version 2 keep theirs inline, which version 3 still reads.
 */
export const SQLITE_MIGRATE_2_TO_3 = `
ALTER TABLE messages ADD COLUMN seg INTEGER;
ALTER TABLE messages ADD COLUMN seg_at INTEGER;
ALTER TABLE messages ADD COLUMN seg_len INTEGER;
`;

/**
 * Version 5 remembers SENDs' idempotency keys (mq9-idempotency-key, Nats-Msg-Id) until their window ends:
 * a repeat then stores nothing. Its log records may carry such a key (see encodeAppendedRows),
 * which an older version would misread, hence a new version.
 */
export const SQLITE_SEND_KEYS = `
CREATE TABLE IF NOT EXISTS send_keys (
  mbox INTEGER NOT NULL,
  id_key TEXT NOT NULL,
  msg_id INTEGER NOT NULL,
  until_ms INTEGER NOT NULL,
  PRIMARY KEY (mbox, id_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS send_keys_by_expiry ON send_keys(until_ms);
`;

/**
 * Version 6 limits deliveries: a mailbox's default limit and dead-letter mailbox, a group's limit,
 * backoff and dead-letter count, and the delivery count (and last failure) of a message delivered
 * more than once, kept in its `deliveries` row until it is ACKed.
 */
function addDeliveryLimits(db: Database.Database): void {
  addColumn(db, "mailboxes", "max_deliver", "INTEGER");
  addColumn(db, "mailboxes", "dead_letter", "TEXT");
  addColumn(db, "groups", "max_deliver", "INTEGER");
  addColumn(db, "groups", "backoff", "TEXT");
  addColumn(db, "groups", "dead_lettered", "INTEGER NOT NULL DEFAULT 0");
  addColumn(db, "deliveries", "delivery_count", "INTEGER NOT NULL DEFAULT 0");
  addColumn(db, "deliveries", "reason", "TEXT");
}

/** Adds a column unless the table has it already (a file made by a later layout and marked older). */
function addColumn(db: Database.Database, table: string, column: string, type: string): void {
  const columns = db.pragma(`table_info(${table})`) as { name: string }[];
  if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/** The step from each older version to the next, applied in order at open. */
export const SQLITE_MIGRATIONS: Readonly<Record<number, (db: Database.Database) => void>> = {
  2: (db) => db.exec(SQLITE_MIGRATE_2_TO_3),
  // Version 4 records who created each mailbox (the user name; NULL without users configured).
  3: (db) => addColumn(db, "mailboxes", "owner", "TEXT"),
  // Version 5: SENDs' idempotency keys (SQLITE_SEND_KEYS).
  4: (db) => db.exec(SQLITE_SEND_KEYS),
  5: addDeliveryLimits,
};

/**
 * Tables of the SQLite store. Priorities are stored as their rank (0 = critical).
 * msg_id is one sequence for the whole store and the table's rowid, which saves
 * a second b-tree per message; ids of one mailbox still grow in send order.
 * A message's header and payload are in the row, or, when seg is set, in
 * the message log: seg_len bytes at seg_at of segment seg.
 */
export const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS mailboxes (
  id INTEGER PRIMARY KEY,
  address TEXT NOT NULL UNIQUE,
  ttl_s INTEGER NOT NULL,
  description TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  owner TEXT,
  max_deliver INTEGER,
  dead_letter TEXT
);
CREATE INDEX IF NOT EXISTS mailboxes_by_expiry ON mailboxes(expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE IF NOT EXISTS messages (
  msg_id INTEGER PRIMARY KEY,
  mbox INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  msg_key TEXT,
  tags TEXT,
  header BLOB,
  payload BLOB NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  seg INTEGER,
  seg_at INTEGER,
  seg_len INTEGER
);
-- Expiry and creation time ride along so a claim finds its ids in the index alone.
DROP INDEX IF EXISTS messages_by_class;
CREATE INDEX IF NOT EXISTS messages_by_class_at ON messages(mbox, priority, msg_id, expires_ms, created_ms);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_key ON messages(mbox, msg_key) WHERE msg_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_by_expiry ON messages(expires_ms) WHERE expires_ms IS NOT NULL;

-- The id counter's high-water mark, kept when the newest messages are deleted.
CREATE TABLE IF NOT EXISTS meta (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS delayed (
  id INTEGER PRIMARY KEY,
  mbox INTEGER NOT NULL,
  due_ms INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  msg_key TEXT,
  tags TEXT,
  header BLOB,
  payload BLOB NOT NULL,
  expires_ms INTEGER
);
CREATE INDEX IF NOT EXISTS delayed_by_due ON delayed(due_ms);
CREATE INDEX IF NOT EXISTS delayed_by_mailbox ON delayed(mbox);

CREATE TABLE IF NOT EXISTS groups (
  mbox INTEGER NOT NULL,
  name TEXT NOT NULL,
  cursor0 INTEGER NOT NULL,
  cursor1 INTEGER NOT NULL,
  cursor2 INTEGER NOT NULL,
  next_batch INTEGER NOT NULL DEFAULT 0,
  max_deliver INTEGER,
  backoff TEXT,
  dead_lettered INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (mbox, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS deliveries (
  mbox INTEGER NOT NULL,
  grp TEXT NOT NULL,
  msg_id INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  batch INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  lease_until_ms INTEGER NOT NULL,
  acked INTEGER NOT NULL DEFAULT 0,
  delivery_count INTEGER NOT NULL DEFAULT 0,
  reason TEXT,
  PRIMARY KEY (mbox, grp, msg_id)
) WITHOUT ROWID;
${SQLITE_SEND_KEYS}`;
