import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { StorageError } from "../store/storage-error.js";
import { ftsQuery } from "./fts-query.js";
import type { AgentSelector } from "./registry-request.js";
import type {
  AgentFilter,
  AgentRow,
  RankedAgent,
  RegistryStore,
  Removed,
  SkillDoc,
  StoredDoc,
} from "./registry-store.js";

export interface SqliteRegistryStoreOptions {
  /** Folder that holds `registry.db`; created when missing. ":memory:" for a throw-away store. */
  dataDir: string;
  sync?: "normal" | "full";
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS agents (
  mailbox TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  body TEXT NOT NULL,
  agent_info TEXT NOT NULL,
  own_name INTEGER NOT NULL,
  tags TEXT NOT NULL,
  ttl_s INTEGER NOT NULL,
  registered_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  expires_ms INTEGER,
  status TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agents_by_name ON agents(name, mailbox);
CREATE INDEX IF NOT EXISTS agents_by_expiry ON agents(expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE IF NOT EXISTS agent_tags (
  tag TEXT NOT NULL,
  mailbox TEXT NOT NULL,
  PRIMARY KEY (tag, mailbox)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agent_tags_by_mailbox ON agent_tags(mailbox);

CREATE TABLE IF NOT EXISTS skill_docs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  mailbox TEXT NOT NULL,
  vec_model TEXT
);
CREATE INDEX IF NOT EXISTS skill_docs_by_mailbox ON skill_docs(mailbox);
CREATE INDEX IF NOT EXISTS skill_docs_by_model ON skill_docs(vec_model, id);

CREATE VIRTUAL TABLE IF NOT EXISTS skill_fts USING fts5(
  agent_name, agent_description, skill_name, skill_description, tags, examples,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
`;

/** BM25 column weights, in the order of skill_fts's columns: a skill's own words count most. */
const BM25_WEIGHTS = "2.0, 1.0, 3.0, 2.0, 2.0, 1.0";

interface AgentDbRow {
  mailbox: string;
  name: string;
  body: string;
  agent_info: string;
  own_name: number;
  tags: string;
  ttl_s: number;
  registered_ms: number;
  last_seen_ms: number;
  expires_ms: number | null;
  status: string | null;
}

interface DocDbRow {
  id: number;
  mailbox: string;
  agent_name: string;
  agent_description: string;
  skill_name: string;
  skill_description: string;
  tags: string;
  examples: string;
}

const LIVE = "(a.expires_ms IS NULL OR a.expires_ms > @now)";

function toAgent(row: AgentDbRow): AgentRow {
  return {
    mailbox: row.mailbox,
    name: row.name,
    bodyJson: row.body,
    agentInfo: row.agent_info,
    hasOwnName: row.own_name === 1,
    tags: JSON.parse(row.tags) as string[],
    ttlS: row.ttl_s,
    registeredMs: row.registered_ms,
    lastSeenMs: row.last_seen_ms,
    statusJson: row.status ?? undefined,
  };
}

function toDoc(row: DocDbRow): StoredDoc {
  return {
    id: row.id,
    mailbox: row.mailbox,
    agentName: row.agent_name,
    agentDescription: row.agent_description,
    skillName: row.skill_name,
    skillDescription: row.skill_description,
    tags: row.tags,
    examples: row.examples,
  };
}

/** SQL (and its parameters) restricting `a` (agents) to live rows matching the filter. */
function filterSql(filter: AgentFilter): { sql: string; params: Record<string, unknown> } {
  const parts = [LIVE];
  const params: Record<string, unknown> = {};
  if (filter.online) parts.push("a.ttl_s > 0");
  if (filter.tags && filter.tags.length > 0) {
    // One index range per tag, intersected: cheap even when a tag is on thousands of agents.
    const sets = filter.tags.map((tag, i) => {
      params[`tag${i}`] = tag;
      return `SELECT mailbox FROM agent_tags WHERE tag = @tag${i}`;
    });
    parts.push(`a.mailbox IN (${sets.join(" INTERSECT ")})`);
  }
  return { sql: parts.join(" AND "), params };
}

/**
 * The embedded registry store: its own SQLite file (`registry.db`) beside the
 * message store, FTS5 for full-text (one row per skill), a tag table for exact
 * tag matches. Owned by this process (exclusive lock).
 */
export class SqliteRegistryStore implements RegistryStore {
  private readonly db: Database.Database;
  private readonly stmt;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(options: SqliteRegistryStoreOptions) {
    const memory = options.dataDir === ":memory:";
    try {
      if (!memory) mkdirSync(options.dataDir, { recursive: true });
      this.db = new Database(memory ? ":memory:" : join(options.dataDir, "registry.db"), { timeout: 200 });
      this.db.pragma("journal_mode = WAL");
      this.db.pragma(`synchronous = ${options.sync === "full" ? "FULL" : "NORMAL"}`);
      this.db.pragma("locking_mode = EXCLUSIVE");
      this.db.exec(SCHEMA);
    } catch (err) {
      throw StorageError.from(err, `cannot open the registry in ${options.dataDir}`);
    }
    const db = this.db;
    this.stmt = {
      upsertAgent: db.prepare(
        `INSERT OR REPLACE INTO agents
           (mailbox, name, body, agent_info, own_name, tags, ttl_s, registered_ms, last_seen_ms, expires_ms, status)
         VALUES (@mailbox, @name, @body, @agent_info, @own_name, @tags, @ttl_s, @registered_ms, @last_seen_ms, @expires_ms, NULL)`,
      ),
      deleteAgent: db.prepare("DELETE FROM agents WHERE mailbox = ?"),
      deleteTags: db.prepare("DELETE FROM agent_tags WHERE mailbox = ?"),
      insertTag: db.prepare("INSERT OR IGNORE INTO agent_tags (tag, mailbox) VALUES (?, ?)"),
      docIdsOf: db.prepare<[string], { id: number }>("SELECT id FROM skill_docs WHERE mailbox = ?"),
      deleteDocs: db.prepare("DELETE FROM skill_docs WHERE mailbox = ?"),
      deleteFts: db.prepare("DELETE FROM skill_fts WHERE rowid = ?"),
      insertDoc: db.prepare<[string], never>("INSERT INTO skill_docs (mailbox) VALUES (?)"),
      insertFts: db.prepare(
        `INSERT INTO skill_fts (rowid, agent_name, agent_description, skill_name, skill_description, tags, examples)
         VALUES (@id, @agentName, @agentDescription, @skillName, @skillDescription, @tags, @examples)`,
      ),
      mailboxesByName: db.prepare<[string], { mailbox: string }>("SELECT mailbox FROM agents WHERE name = ?"),
      mailboxExists: db.prepare<[string], { mailbox: string }>(
        "SELECT mailbox FROM agents WHERE mailbox = ?",
      ),
      touch: db.prepare(
        `UPDATE agents SET last_seen_ms = @now, status = @status,
           expires_ms = CASE WHEN ttl_s > 0 THEN @now + ttl_s * 1000 ELSE NULL END
         WHERE mailbox = @mailbox AND (expires_ms IS NULL OR expires_ms > @now)`,
      ),
      get: db.prepare(
        `SELECT a.* FROM agents a WHERE a.mailbox IN (SELECT value FROM json_each(@mailboxes)) AND ${LIVE}`,
      ),
      docsToEmbed: db.prepare<{ model: string; after: number; limit: number }, DocDbRow>(
        `SELECT d.id, d.mailbox, f.agent_name, f.agent_description, f.skill_name, f.skill_description, f.tags, f.examples
         FROM skill_docs d JOIN skill_fts f ON f.rowid = d.id
         WHERE d.id > @after AND (d.vec_model IS NULL OR d.vec_model <> @model)
         ORDER BY d.id LIMIT @limit`,
      ),
      markEmbedded: db.prepare<[string, number]>("UPDATE skill_docs SET vec_model = ? WHERE id = ?"),
      resetEmbedded: db.prepare("UPDATE skill_docs SET vec_model = NULL WHERE vec_model IS NOT NULL"),
      embeddedModels: db.prepare<[], { vec_model: string; n: number }>(
        "SELECT vec_model, count(*) AS n FROM skill_docs WHERE vec_model IS NOT NULL GROUP BY vec_model",
      ),
      expired: db.prepare<[number], { mailbox: string }>(
        "SELECT mailbox FROM agents WHERE expires_ms IS NOT NULL AND expires_ms <= ? LIMIT 1000",
      ),
      count: db.prepare<{ now: number }, { n: number }>(`SELECT count(*) AS n FROM agents a WHERE ${LIVE}`),
    };
  }

  /** Deletes one registration with its tags and docs; returns the docs' ids. */
  private deleteOne(mailbox: string): number[] {
    const ids = this.stmt.docIdsOf.all(mailbox).map((r) => r.id);
    for (const id of ids) this.stmt.deleteFts.run(id);
    this.stmt.deleteDocs.run(mailbox);
    this.stmt.deleteTags.run(mailbox);
    this.stmt.deleteAgent.run(mailbox);
    return ids;
  }

  private deleteAll(mailboxes: string[]): Removed {
    const docIds: number[] = [];
    for (const mailbox of mailboxes) docIds.push(...this.deleteOne(mailbox));
    return { mailboxes, docIds };
  }

  private cached(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private run<T>(what: string, work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(StorageError.from(err, what));
    }
  }

  put(agent: AgentRow, docs: SkillDoc[]): Promise<{ ids: number[]; replaced: number[] }> {
    return this.run(
      "registry write failed",
      this.db.transaction(() => {
        const replaced = this.deleteOne(agent.mailbox);
        this.stmt.upsertAgent.run({
          mailbox: agent.mailbox,
          name: agent.name,
          body: agent.bodyJson,
          agent_info: agent.agentInfo,
          own_name: agent.hasOwnName ? 1 : 0,
          tags: JSON.stringify(agent.tags),
          ttl_s: agent.ttlS,
          registered_ms: agent.registeredMs,
          last_seen_ms: agent.lastSeenMs,
          expires_ms: agent.ttlS > 0 ? agent.lastSeenMs + agent.ttlS * 1000 : null,
        });
        for (const tag of agent.tags) this.stmt.insertTag.run(tag, agent.mailbox);
        const ids: number[] = [];
        for (const doc of docs) {
          const id = Number(this.stmt.insertDoc.run(agent.mailbox).lastInsertRowid);
          this.stmt.insertFts.run({ id, ...doc });
          ids.push(id);
        }
        return { ids, replaced };
      }),
    );
  }

  private selected(selector: AgentSelector): string[] {
    const mailboxes = new Set<string>();
    if (selector.mailbox !== undefined && this.stmt.mailboxExists.get(selector.mailbox)) {
      mailboxes.add(selector.mailbox);
    }
    if (selector.name !== undefined) {
      for (const { mailbox } of this.stmt.mailboxesByName.all(selector.name)) mailboxes.add(mailbox);
    }
    return [...mailboxes];
  }

  remove(selector: AgentSelector): Promise<Removed> {
    return this.run(
      "registry delete failed",
      this.db.transaction(() => this.deleteAll(this.selected(selector))),
    );
  }

  report(selector: AgentSelector, statusJson: string, nowMs: number): Promise<number> {
    return this.run(
      "registry write failed",
      this.db.transaction(() => {
        let updated = 0;
        for (const mailbox of this.selected(selector)) {
          updated += this.stmt.touch.run({ mailbox, now: nowMs, status: statusJson }).changes;
        }
        return updated;
      }),
    );
  }

  get(mailboxes: string[], nowMs: number): Promise<AgentRow[]> {
    if (mailboxes.length === 0) return Promise.resolve([]);
    return this.run("registry read failed", () =>
      (this.stmt.get.all({ mailboxes: JSON.stringify(mailboxes), now: nowMs }) as AgentDbRow[]).map(toAgent),
    );
  }

  list(filter: AgentFilter, nowMs: number, offset: number, limit: number): Promise<AgentRow[]> {
    const where = filterSql(filter);
    const sql = `SELECT a.* FROM agents a WHERE ${where.sql} ORDER BY a.name, a.mailbox LIMIT @limit OFFSET @offset`;
    return this.run("registry read failed", () =>
      (this.cached(sql).all({ ...where.params, now: nowMs, limit, offset }) as AgentDbRow[]).map(toAgent),
    );
  }

  search(
    text: string,
    filter: AgentFilter,
    nowMs: number,
    offset: number,
    limit: number,
  ): Promise<RankedAgent[]> {
    const match = ftsQuery(text);
    const need = offset + limit;
    if (match === undefined || need === 0) return Promise.resolve([]);
    const where = filterSql(filter);
    // FTS5 ranks inside its own ORDER BY rank LIMIT (bm25 with our column weights); only those top
    // docs are checked against their agents, and the window widens until enough agents are found.
    const top = this.cached(
      `SELECT rowid AS id, rank FROM skill_fts
       WHERE skill_fts MATCH @match AND rank MATCH 'bm25(${BM25_WEIGHTS})' ORDER BY rank LIMIT @window`,
    );
    const owners = this.cached(
      `SELECT d.id AS id, d.mailbox AS mailbox FROM skill_docs d JOIN agents a ON a.mailbox = d.mailbox
       WHERE d.id IN (SELECT value FROM json_each(@ids)) AND ${where.sql}`,
    );
    return this.run("registry search failed", () => {
      for (let window = need * 8 + 32; ; window *= 4) {
        const hits = top.all({ match, window }) as { id: number; rank: number }[];
        const mailboxOf = new Map(
          (
            owners.all({ ...where.params, now: nowMs, ids: JSON.stringify(hits.map((h) => h.id)) }) as {
              id: number;
              mailbox: string;
            }[]
          ).map((r) => [r.id, r.mailbox]),
        );
        const best = new Map<string, number>();
        for (const hit of hits) {
          const mailbox = mailboxOf.get(hit.id);
          if (mailbox !== undefined && !best.has(mailbox)) best.set(mailbox, hit.rank);
        }
        if (best.size >= need || hits.length < window) {
          return [...best].slice(offset, need).map(([mailbox, rank]) => ({ mailbox, score: -rank }));
        }
      }
    });
  }

  candidates(filter: AgentFilter, nowMs: number): Promise<Set<string>> {
    const where = filterSql(filter);
    const sql = `SELECT a.mailbox FROM agents a WHERE ${where.sql}`;
    return this.run(
      "registry read failed",
      () =>
        new Set(
          (this.cached(sql).all({ ...where.params, now: nowMs }) as { mailbox: string }[]).map(
            (r) => r.mailbox,
          ),
        ),
    );
  }

  docsToEmbed(model: string, afterId: number, limit: number): Promise<StoredDoc[]> {
    return this.run("registry read failed", () =>
      this.stmt.docsToEmbed.all({ model, after: afterId, limit }).map(toDoc),
    );
  }

  markEmbedded(ids: number[], model: string): Promise<number[]> {
    return this.run(
      "registry write failed",
      this.db.transaction(() => ids.filter((id) => this.stmt.markEmbedded.run(model, id).changes > 0)),
    );
  }

  resetEmbedded(): Promise<void> {
    return this.run("registry write failed", () => {
      this.stmt.resetEmbedded.run();
    });
  }

  embeddedSummary(): Promise<{ models: string[]; count: number }> {
    return this.run("registry read failed", () => {
      const rows = this.stmt.embeddedModels.all();
      return { models: rows.map((r) => r.vec_model), count: rows.reduce((sum, r) => sum + r.n, 0) };
    });
  }

  purgeExpired(nowMs: number): Promise<Removed> {
    return this.run(
      "registry purge failed",
      this.db.transaction(() => this.deleteAll(this.stmt.expired.all(nowMs).map((r) => r.mailbox))),
    );
  }

  count(nowMs: number): Promise<number> {
    return this.run("registry read failed", () => this.stmt.count.get({ now: nowMs })!.n);
  }

  close(): Promise<void> {
    return this.run("registry close failed", () => {
      if (this.db.open) this.db.close();
    });
  }
}
