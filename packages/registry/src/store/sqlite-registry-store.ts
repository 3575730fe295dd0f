import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { StorageError } from "@mq9/broker";
import { SqliteDriver as Database } from "@mq9/broker/internal";
import type { AgentSelector, ResourceKind } from "@mq9/protocol";
import { IndexedRegistryReads } from "./indexed-registry-reads.js";
import { expiryOf } from "./registration-index.js";
import { openRegistrySchema } from "./registry-schema.js";
import type { AgentRow, RegistryStore, Removed, SkillDoc, StoredDoc } from "./registry-store.js";
import { type SkillDocRow, toStoredDoc } from "./skill-doc-row.js";

export interface SqliteRegistryStoreOptions {
  /** Folder that holds `registry.db`; created when missing. ":memory:" for a throw-away store. */
  dataDir: string;
  sync?: "normal" | "full";
}

const DOC_COLUMNS =
  "id, mailbox, agent_name, agent_description, skill_name, skill_description, tags, examples";

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
  owner: string | null;
  kind: string;
}

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
    owner: row.owner ?? undefined,
    ...(row.kind === "agent" ? {} : { kind: row.kind as ResourceKind }),
  };
}

/**
 * The embedded registry store: its own SQLite file (`registry.db`) beside the
 * message store, one row per skill. Owned by this process (exclusive lock),
 * so reads are answered from memory: a RegistrationIndex (records, liveness,
 * tags, name order) and a Bm25Index over the skills, loaded at open and
 * updated after each commit. SQLite keeps them durable.
 */
export class SqliteRegistryStore extends IndexedRegistryReads implements RegistryStore {
  private readonly db: Database.Database;
  private readonly stmt;

  constructor(options: SqliteRegistryStoreOptions) {
    super();
    const memory = options.dataDir === ":memory:";
    try {
      if (!memory) mkdirSync(options.dataDir, { recursive: true });
      this.db = new Database(memory ? ":memory:" : join(options.dataDir, "registry.db"), { timeout: 200 });
      // Exclusive before the first access: the WAL index then lives in memory, not in a -shm
      // file, which a full disk may not let SQLite create or grow (the registry would not open).
      this.db.pragma("locking_mode = EXCLUSIVE");
      this.db.pragma("journal_mode = WAL");
      this.db.pragma(`synchronous = ${options.sync === "full" ? "FULL" : "NORMAL"}`);
      openRegistrySchema(this.db);
    } catch (err) {
      throw StorageError.from(err, `cannot open the registry in ${options.dataDir}`);
    }
    const db = this.db;
    this.stmt = {
      insertAgent: db.prepare(
        `INSERT INTO agents
           (mailbox, name, body, agent_info, own_name, tags, ttl_s, registered_ms, last_seen_ms, expires_ms, status, owner, kind)
         VALUES (@mailbox, @name, @body, @agent_info, @own_name, @tags, @ttl_s, @registered_ms, @last_seen_ms, @expires_ms, NULL, @owner, @kind)`,
      ),
      deleteAgent: db.prepare("DELETE FROM agents WHERE mailbox = ?"),
      docIdsOf: db.prepare<[string], { id: number }>("SELECT id FROM skill_docs WHERE mailbox = ?"),
      deleteDocs: db.prepare("DELETE FROM skill_docs WHERE mailbox = ?"),
      insertDoc: db.prepare(
        `INSERT INTO skill_docs (mailbox, agent_name, agent_description, skill_name, skill_description, tags, examples)
         VALUES (@mailbox, @agentName, @agentDescription, @skillName, @skillDescription, @tags, @examples)`,
      ),
      mailboxesByName: db.prepare<[string], { mailbox: string }>("SELECT mailbox FROM agents WHERE name = ?"),
      touch: db.prepare(
        `UPDATE agents SET last_seen_ms = @now, status = @status,
           expires_ms = CASE WHEN ttl_s > 0 THEN @now + ttl_s * 1000 ELSE NULL END
         WHERE mailbox = @mailbox AND (expires_ms IS NULL OR expires_ms > @now)`,
      ),
      docsToEmbed: db.prepare<{ model: string; after: number; limit: number }, SkillDocRow>(
        `SELECT ${DOC_COLUMNS} FROM skill_docs
         WHERE id > @after AND (vec_model IS NULL OR vec_model <> @model)
         ORDER BY id LIMIT @limit`,
      ),
      markEmbedded: db.prepare<[string, number]>("UPDATE skill_docs SET vec_model = ? WHERE id = ?"),
      resetEmbedded: db.prepare("UPDATE skill_docs SET vec_model = NULL WHERE vec_model IS NOT NULL"),
      embeddedModels: db.prepare<[], { vec_model: string; n: number }>(
        "SELECT vec_model, count(*) AS n FROM skill_docs WHERE vec_model IS NOT NULL GROUP BY vec_model",
      ),
      expired: db.prepare<[number], { mailbox: string }>(
        "SELECT mailbox FROM agents WHERE expires_ms IS NOT NULL AND expires_ms <= ? LIMIT 1000",
      ),
      allAgents: db.prepare<[], AgentDbRow>("SELECT * FROM agents"),
      allDocs: db.prepare<[], SkillDocRow>(`SELECT ${DOC_COLUMNS} FROM skill_docs ORDER BY id`),
    };
    try {
      this.loadIndexes();
    } catch (err) {
      this.db.close();
      throw StorageError.from(err, `cannot read the registry in ${options.dataDir}`);
    }
  }

  /** Deletes one registration with its tags and docs; returns the docs' ids. */
  private deleteOne(mailbox: string): number[] {
    const ids = this.stmt.docIdsOf.all(mailbox).map((r) => r.id);
    this.stmt.deleteDocs.run(mailbox);
    this.stmt.deleteAgent.run(mailbox);
    return ids;
  }

  private deleteAll(mailboxes: string[]): Removed {
    const docIds: number[] = [];
    for (const mailbox of mailboxes) docIds.push(...this.deleteOne(mailbox));
    return { mailboxes, docIds };
  }

  /** Fills the in-memory indexes from the tables (at open). */
  private loadIndexes(): void {
    const docs = new Map<string, SkillDocRow[]>();
    for (const doc of this.stmt.allDocs.iterate()) {
      const list = docs.get(doc.mailbox);
      if (list) list.push(doc);
      else docs.set(doc.mailbox, [doc]);
    }
    for (const row of this.stmt.allAgents.iterate()) {
      const agentDocs = (docs.get(row.mailbox) ?? []).map(toStoredDoc);
      this.index(
        toAgent(row),
        agentDocs.map((doc) => doc.id),
        agentDocs,
      );
    }
  }

  private run<T>(what: string, work: () => T): Promise<T> {
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(StorageError.from(err, what));
    }
  }

  put(agent: AgentRow, docs: SkillDoc[]): Promise<{ ids: number[]; replaced: number[] }> {
    const expiresMs = expiryOf(agent.ttlS, agent.lastSeenMs);
    const write = this.db.transaction(() => {
      const replaced = this.deleteOne(agent.mailbox);
      this.stmt.insertAgent.run({
        mailbox: agent.mailbox,
        name: agent.name,
        body: agent.bodyJson,
        agent_info: agent.agentInfo,
        own_name: agent.hasOwnName ? 1 : 0,
        tags: JSON.stringify(agent.tags),
        ttl_s: agent.ttlS,
        registered_ms: agent.registeredMs,
        last_seen_ms: agent.lastSeenMs,
        expires_ms: expiresMs,
        owner: agent.owner ?? null,
        kind: agent.kind ?? "agent",
      });
      const ids: number[] = [];
      for (const doc of docs) {
        ids.push(Number(this.stmt.insertDoc.run({ mailbox: agent.mailbox, ...doc }).lastInsertRowid));
      }
      return { ids, replaced };
    });
    return this.run("registry write failed", () => {
      const result = write();
      this.unindex(agent.mailbox);
      this.index({ ...agent, statusJson: undefined }, result.ids, docs);
      return result;
    });
  }

  private selected(selector: AgentSelector): string[] {
    const mailboxes = new Set<string>();
    if (selector.mailbox !== undefined && this.registrations.get(selector.mailbox)) {
      mailboxes.add(selector.mailbox);
    }
    if (selector.name !== undefined) {
      for (const { mailbox } of this.stmt.mailboxesByName.all(selector.name)) mailboxes.add(mailbox);
    }
    const owner = selector.owner;
    if (owner === undefined) return [...mailboxes];
    return [...mailboxes].filter((mailbox) => this.registrations.get(mailbox)?.record.owner === owner);
  }

  select(selector: AgentSelector, nowMs: number): Promise<AgentRow[]> {
    return this.run("registry read failed", () =>
      this.selected(selector).flatMap((mailbox) => {
        const entry = this.registrations.get(mailbox);
        return entry !== undefined && this.registrations.isLive(entry, nowMs) ? [entry.record] : [];
      }),
    );
  }

  /** Deletes registrations in one transaction, then forgets them in memory. */
  private removeAll(mailboxes: () => string[]): Removed {
    const removed = this.db.transaction(() => this.deleteAll(mailboxes()))();
    for (const mailbox of removed.mailboxes) this.unindex(mailbox);
    return removed;
  }

  remove(selector: AgentSelector): Promise<Removed> {
    return this.run("registry delete failed", () => this.removeAll(() => this.selected(selector)));
  }

  report(selector: AgentSelector, statusJson: string, nowMs: number): Promise<number> {
    const write = this.db.transaction(() =>
      this.selected(selector).filter(
        (mailbox) => this.stmt.touch.run({ mailbox, now: nowMs, status: statusJson }).changes > 0,
      ),
    );
    return this.run("registry write failed", () => {
      const touched = write();
      for (const mailbox of touched) {
        const entry = this.registrations.get(mailbox);
        if (entry) this.registrations.touch(entry, nowMs, statusJson);
      }
      return touched.length;
    });
  }

  docsToEmbed(model: string, afterId: number, limit: number): Promise<StoredDoc[]> {
    return this.run("registry read failed", () =>
      this.stmt.docsToEmbed.all({ model, after: afterId, limit }).map(toStoredDoc),
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
    return this.run("registry purge failed", () =>
      this.removeAll(() => this.stmt.expired.all(nowMs).map((r) => r.mailbox)),
    );
  }

  close(): Promise<void> {
    return this.run("registry close failed", () => {
      if (this.db.open) this.db.close();
    });
  }
}
