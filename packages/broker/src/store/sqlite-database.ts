import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA, SQLITE_SCHEMA_VERSION } from "./sqlite-schema.js";
import { StorageError } from "./storage-error.js";

const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** The embedded store's database, opened, its schema current. */
export interface OpenedDatabase {
  db: Database.Database;
  /** The database file, or ":memory:". */
  file: string;
  /** Held open for the store's life: a second broker on the same directory is refused. */
  ownerLock?: Database.Database;
  /** Databases made before this version have no incremental vacuum (it needs a full VACUUM to turn on). */
  incrementalVacuum: boolean;
}

/**
 * Opens `mq9.db` in `dataDir` (":memory:" for a throw-away one) in WAL mode, owned by this
 * process (an exclusive lock), migrating or creating its schema.
 */
export function openSqliteDatabase(dataDir: string, synchronous: "NORMAL" | "FULL"): OpenedDatabase {
  const file = dataDir === ":memory:" ? ":memory:" : join(dataDir, "mq9.db");
  let ownerLock: Database.Database | undefined;
  try {
    if (file !== ":memory:") {
      mkdirSync(dataDir, { recursive: true });
      ownerLock = lockDataDir(join(dataDir, "mq9.lock"));
    }
    const db = new Database(file, { timeout: 200 });
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${synchronous}`);
    // Checkpoints run on a worker (DiskUpkeep); a reset WAL is cut back to this size.
    db.pragma("wal_autocheckpoint = 0");
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    createOrCheckSchema(db);
    const incrementalVacuum = db.pragma("auto_vacuum", { simple: true }) === 2;
    return { db, file, ownerLock, incrementalVacuum };
  } catch (err) {
    ownerLock?.close();
    throw StorageError.from(err, `cannot open the store in ${dataDir}`);
  }
}

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

function createOrCheckSchema(db: Database.Database): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  const empty = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get() === undefined;
  // Set before the first table: free pages can then be given back without a full VACUUM.
  if (empty) db.pragma("auto_vacuum = INCREMENTAL");
  let at = version;
  if (!empty) {
    // Each step in its own transaction with the version it reaches, so a crash leaves a known version.
    while (at < SQLITE_SCHEMA_VERSION && SQLITE_MIGRATIONS[at] !== undefined) {
      const step = SQLITE_MIGRATIONS[at];
      db.transaction(() => {
        step(db);
        db.pragma(`user_version = ${at + 1}`);
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
  if (empty || version !== SQLITE_SCHEMA_VERSION || !hasCurrentSchema(db)) {
    db.exec(SQLITE_SCHEMA);
    db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`);
  }
}

/** Whether every table and index of SQLITE_SCHEMA exists (and the one it drops does not). */
function hasCurrentSchema(db: Database.Database): boolean {
  const names = new Set(
    db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
      .all()
      .map((row) => row.name),
  );
  const wanted = [...SQLITE_SCHEMA.matchAll(/CREATE (?:UNIQUE )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)/g)].map(
    (m) => m[1],
  );
  return wanted.every((name) => names.has(name)) && !names.has("messages_by_class");
}
