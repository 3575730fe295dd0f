import type { SqliteDriver as Database } from "@mq9/broker/internal";

/** Bumped whenever the layout below changes; `user_version` of registry.db. */
export const REGISTRY_SCHEMA_VERSION = 3;

const TABLES = `
CREATE TABLE IF NOT EXISTS agents (
  mailbox TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  body TEXT NOT NULL,
  agent_info TEXT NOT NULL,
  own_name INTEGER NOT NULL,
  tags TEXT NOT NULL,
  ttl_s INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  status TEXT,
  owner TEXT,
  kind TEXT NOT NULL DEFAULT 'agent'
);
CREATE INDEX IF NOT EXISTS agents_by_name ON agents(name);
CREATE INDEX IF NOT EXISTS agents_by_expiry ON agents(expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE IF NOT EXISTS skill_docs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  mailbox TEXT NOT NULL,
  vec_model TEXT,
  agent_name TEXT NOT NULL,
  agent_description TEXT NOT NULL,
  skill_name TEXT NOT NULL,
  skill_description TEXT NOT NULL,
  tags TEXT NOT NULL,
  examples TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS skill_docs_by_mailbox ON skill_docs(mailbox);
CREATE INDEX IF NOT EXISTS skill_docs_by_model ON skill_docs(vec_model, id);
`;

const AGENT_COLUMNS =
  "mailbox, name, body, agent_info, own_name, tags, ttl_s, registered_ms, last_seen_ms, expires_ms, status";
const TEXT_COLUMNS = "agent_name, agent_description, skill_name, skill_description, tags, examples";

function hasTable(db: Database.Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * Version 0 kept skill texts in an FTS5 table and agents in a WITHOUT ROWID
 * table. Search moved into memory, so the texts now sit in plain columns
 * (an FTS5 insert was most of a REGISTER's cost) and agents in a rowid table
 * (large bodies do not belong in a WITHOUT ROWID b-tree). Doc ids are kept, and
 * so is the sequence, so ids are still never reused.
 */
function upgradeFromVersion0(db: Database.Database): void {
  const sequence = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'skill_docs'").get() as
    | { seq: number }
    | undefined;
  db.exec(`
    DROP INDEX IF EXISTS agents_by_name;
    DROP INDEX IF EXISTS agents_by_expiry;
    DROP INDEX IF EXISTS skill_docs_by_mailbox;
    DROP INDEX IF EXISTS skill_docs_by_model;
    ALTER TABLE agents RENAME TO agents_v0;
    ALTER TABLE skill_docs RENAME TO skill_docs_v0;
    ${TABLES}
    INSERT INTO agents (${AGENT_COLUMNS}) SELECT ${AGENT_COLUMNS} FROM agents_v0;
    INSERT INTO skill_docs (id, mailbox, vec_model, ${TEXT_COLUMNS})
      SELECT d.id, d.mailbox, d.vec_model, ${TEXT_COLUMNS.split(", ")
        .map((c) => `f.${c}`)
        .join(", ")}
      FROM skill_docs_v0 d JOIN skill_fts f ON f.rowid = d.id;
    DROP TABLE agents_v0;
    DROP TABLE skill_docs_v0;
    DROP TABLE skill_fts;
    DROP TABLE IF EXISTS agent_tags;
  `);
  if (sequence) {
    db.prepare("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'skill_docs'").run(sequence.seq);
  }
}

/** Version 2 records who made each registration (the user name; NULL without users configured). */
function upgradeFromVersion1(db: Database.Database): void {
  const columns = db.pragma("table_info(agents)") as { name: string }[];
  if (!columns.some((c) => c.name === "owner")) db.exec("ALTER TABLE agents ADD COLUMN owner TEXT");
}

/** Version 3 records what each registration describes: an agent (all before it) or an MCP server. */
function upgradeFromVersion2(db: Database.Database): void {
  const columns = db.pragma("table_info(agents)") as { name: string }[];
  if (!columns.some((c) => c.name === "kind")) {
    db.exec("ALTER TABLE agents ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent'");
  }
}

/** Creates the registry's tables, or upgrades those of an earlier version in one transaction. */
export function openRegistrySchema(db: Database.Database): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > REGISTRY_SCHEMA_VERSION) {
    throw new Error(
      `registry.db has layout version ${version}, newer than this mq9 understands (${REGISTRY_SCHEMA_VERSION}); run a newer mq9 or use another data dir`,
    );
  }
  if (version === REGISTRY_SCHEMA_VERSION) return;
  db.transaction(() => {
    if (hasTable(db, "skill_fts")) upgradeFromVersion0(db);
    else if (version === 1 || version === 2) {
      if (version === 1) upgradeFromVersion1(db);
      upgradeFromVersion2(db);
    } else db.exec(TABLES);
    db.pragma(`user_version = ${REGISTRY_SCHEMA_VERSION}`);
  })();
}
