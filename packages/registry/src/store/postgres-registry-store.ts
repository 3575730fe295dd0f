import type { Logger } from "@mq9/broker";
import { type ClusterLock, postgresError, withCheckedOutClient } from "@mq9/broker/internal";
import type { AgentSelector, ResourceKind } from "@mq9/protocol";
import type pg from "pg";
import type { VectorItem, VectorStore } from "../vectors/vector-store.js";
import { IndexedRegistryReads } from "./indexed-registry-reads.js";
import { expiryOf } from "./registration-index.js";
import type { AgentRow, RegistryStore, Removed, SkillDoc, StoredDoc } from "./registry-store.js";
import { type SkillDocRow, toStoredDoc } from "./skill-doc-row.js";

/**
 * How often a node reads the registry's changes unasked: how stale the reads that do not catch up
 * first (lists of the HTTP API) may be. DISCOVER and lookups catch up (see catchUp), so an idle
 * node need not poll more often.
 */
const FOLLOW_INTERVAL_MS = 1_000;
/** A doc whose node has not embedded it after this long is embedded by whichever node looks. */
const ORPHAN_AFTER_MS = 60_000;
/**
 * How long a read waits for this node to catch up with the registry's newest committed change
 * before it answers from what the node has (and says so): docs/cluster.md.
 */
export const CATCH_UP_MS = 2_000;
/** The newest committed change: both columns are indexed, so two index probes. */
const NEWEST_CHANGE = `SELECT greatest((SELECT max(change) FROM registry_agents),
  (SELECT max(change) FROM registry_removals)) AS newest`;

interface AgentDbRow {
  owner: string | null;
  mailbox: string;
  name: string;
  body: string;
  agent_info: string;
  own_name: boolean;
  tags: string[];
  ttl_s: number;
  registered_ms: number;
  last_seen_ms: number;
  status: string | null;
  change: number;
  docs_change: number;
  kind: string;
}

interface DocDbRow extends SkillDocRow {
  vector?: Buffer | null;
}

const DOC_COLUMNS =
  "id, mailbox, agent_name, agent_description, skill_name, skill_description, tags, examples";

function toAgent(row: AgentDbRow): AgentRow {
  return {
    owner: row.owner ?? undefined,
    mailbox: row.mailbox,
    name: row.name,
    bodyJson: row.body,
    agentInfo: row.agent_info,
    hasOwnName: row.own_name,
    tags: row.tags,
    ttlS: row.ttl_s,
    registeredMs: row.registered_ms,
    lastSeenMs: row.last_seen_ms,
    statusJson: row.status ?? undefined,
    ...(row.kind === "agent" ? {} : { kind: row.kind as ResourceKind }),
  };
}

function vectorOf(bytes: Buffer): Float32Array {
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
}

export interface PostgresRegistryStoreOptions {
  pool: pg.Pool;
  /** Makes the expiry lock (one purging node per cluster). */
  clusterLock: (name: string, what: string) => ClusterLock;
  schema: string;
  /** This node's instance name: it embeds the docs of the REGISTERs it took. */
  node: string;
  logger: Logger;
  /** Describes the database in errors (host:port/db). */
  where: string;
  /**
   * This process is the registry's only writer (one broker on PostgreSQL): what it reads in
   * memory is already the newest, so reads need not catch up first. Default: other nodes write too.
   */
  soleWriter?: boolean;
}

/**
 * The agent registry of a cluster: registrations, heartbeats, skill docs and their vectors are
 * rows in PostgreSQL; each node answers DISCOVER from its own in-memory indexes (registration index,
 * BM25, vectors) and follows the other nodes' changes every FOLLOW_INTERVAL_MS. Writes take
 * one advisory lock, so change numbers commit in order and "everything after n" misses nothing.
 * Before a read the registry calls catchUp(): the node reads the newest committed change number
 * and, when it has not followed that far, follows now, so a client reads its own writes whichever
 * node its next request reaches. A doc's vector is computed by the node that took its REGISTER and stored with the doc;
 * the other nodes load it. Expired registrations are purged by one node (an advisory lock).
 */
export class PostgresRegistryStore extends IndexedRegistryReads implements RegistryStore {
  /** The change number each registration in memory was read at. */
  private readonly changeOf = new Map<string, number>();
  private followed = 0;
  private timer?: NodeJS.Timeout;
  private following?: Promise<void>;
  /** A follow queued behind the one in flight, for reads that arrived after that one began. */
  private queued?: Promise<void>;
  /** Docs followed from other nodes whose vectors are not stored yet (their node is embedding them). */
  private readonly awaiting = new Set<number>();
  /** Vectors read before shareVectors named where they go, and their loading there. */
  private unshared: VectorItem[] = [];
  private sharing?: Promise<void>;
  private closed = false;
  private vectors?: VectorStore;
  private readonly expiryLock: ClusterLock;
  private readonly lockName: string;

  private constructor(private readonly options: PostgresRegistryStoreOptions) {
    super();
    this.lockName = `mq9:${options.schema}:registry`;
    this.expiryLock = options.clusterLock("registry-expiry", "registry expiry");
  }

  /** Loads the whole registry into memory and starts following its changes. */
  static async open(options: PostgresRegistryStoreOptions): Promise<PostgresRegistryStore> {
    const store = new PostgresRegistryStore(options);
    await store.follow();
    store.timer = setInterval(() => {
      void store.follow().catch(() => {});
    }, FOLLOW_INTERVAL_MS);
    store.timer.unref();
    return store;
  }

  /**
   * The node-local vector store this registry's vectors live in: vectors the indexer upserts are
   * stored with their docs, and the other nodes' vectors are loaded into it.
   */
  shareVectors(local: VectorStore): VectorStore {
    this.vectors = local;
    const loaded = this.unshared;
    this.unshared = [];
    if (loaded.length > 0) this.sharing = local.upsert(loaded);
    const registry = this;
    return {
      async upsert(items: VectorItem[]) {
        await local.upsert(items);
        for (const item of items) registry.awaiting.delete(item.id);
        const gone = await registry.saveVectors(items);
        if (gone.length > 0) await local.delete({ ids: gone });
      },
      query: (vector, filter, limit) => local.query(vector, filter, limit),
      delete: (selector) => local.delete(selector),
      count: async () => (await registry.embeddedSummary()).count,
      clear: () => local.clear(),
      close: () => local.close(),
      status: local.status ? () => local.status!() : undefined,
    };
  }

  async put(agent: AgentRow, docs: SkillDoc[]): Promise<{ ids: number[]; replaced: number[] }> {
    const now = Date.now();
    const result = await this.write("registry write failed", async (c) => {
      const replaced = (
        await c.query<{ id: number }>("DELETE FROM registry_docs WHERE mailbox = $1 RETURNING id", [
          agent.mailbox,
        ])
      ).rows.map((r) => r.id);
      const { rows } = await c.query<{ change: number }>(
        `INSERT INTO registry_agents (mailbox, name, body, agent_info, own_name, tags, ttl_s, registered_ms,
           last_seen_ms, expires_ms, status, change, docs_change, owner, kind)
         SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, NULL, n.c, n.c, $11, $12
         FROM (SELECT nextval('registry_changes') AS c) AS n
         ON CONFLICT (mailbox) DO UPDATE SET name = excluded.name, body = excluded.body, agent_info = excluded.agent_info,
           own_name = excluded.own_name, tags = excluded.tags, ttl_s = excluded.ttl_s, registered_ms = excluded.registered_ms,
           last_seen_ms = excluded.last_seen_ms, expires_ms = excluded.expires_ms, status = NULL,
           change = excluded.change, docs_change = excluded.docs_change, owner = excluded.owner,
           kind = excluded.kind
         RETURNING change`,
        [
          agent.mailbox,
          agent.name,
          agent.bodyJson,
          agent.agentInfo,
          agent.hasOwnName,
          JSON.stringify(agent.tags),
          agent.ttlS,
          agent.registeredMs,
          agent.lastSeenMs,
          expiryOf(agent.ttlS, agent.lastSeenMs),
          agent.owner ?? null,
          agent.kind ?? "agent",
        ],
      );
      const ids: number[] = [];
      if (docs.length > 0) {
        const inserted = await c.query<{ id: number }>(
          `INSERT INTO registry_docs (mailbox, agent_name, agent_description, skill_name, skill_description, tags,
             examples, node, created_ms)
           SELECT $1, a, b, c, d, e, f, $8, $9
           FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY
             AS t(a, b, c, d, e, f, ord)
           ORDER BY ord RETURNING id`,
          [
            agent.mailbox,
            docs.map((d) => d.agentName),
            docs.map((d) => d.agentDescription),
            docs.map((d) => d.skillName),
            docs.map((d) => d.skillDescription),
            docs.map((d) => d.tags),
            docs.map((d) => d.examples),
            this.options.node,
            now,
          ],
        );
        ids.push(...inserted.rows.map((r) => r.id).sort((a, b) => a - b));
      }
      return { ids, replaced, change: rows[0].change };
    });
    this.unindex(agent.mailbox);
    this.index({ ...agent, statusJson: undefined }, result.ids, docs);
    this.changeOf.set(agent.mailbox, result.change);
    return { ids: result.ids, replaced: result.replaced };
  }

  async remove(selector: AgentSelector): Promise<Removed> {
    return this.removeWhere("registry delete failed", (c) => this.selected(c, selector));
  }

  async report(selector: AgentSelector, statusJson: string, nowMs: number): Promise<number> {
    const touched = await this.write("registry write failed", async (c) => {
      const mailboxes = await this.selected(c, selector);
      if (mailboxes.length === 0) return [];
      const { rows } = await c.query<{ mailbox: string; change: number; docs_change: number }>(
        `UPDATE registry_agents SET last_seen_ms = $2, status = $3,
           expires_ms = CASE WHEN ttl_s > 0 THEN $2 + ttl_s * 1000 ELSE NULL END,
           change = nextval('registry_changes')
         WHERE mailbox = ANY($1::text[]) AND (expires_ms IS NULL OR expires_ms > $2)
         RETURNING mailbox, change, docs_change`,
        [mailboxes, nowMs, statusJson],
      );
      return rows;
    });
    for (const { mailbox, change, docs_change } of touched) {
      const entry = this.registrations.get(mailbox);
      // A registration this node has not followed yet, or not in its latest form (registered again
      // on another node), stays unclaimed: its next follow loads it.
      if (!entry || (this.changeOf.get(mailbox) ?? 0) < docs_change) continue;
      this.registrations.touch(entry, nowMs, statusJson);
      this.changeOf.set(mailbox, change);
    }
    return touched.length;
  }

  /**
   * Follows the registry up to its newest committed change before a read: one indexed query when
   * this node is up to date. Resolves to why it could not (the database failed, or it took more
   * than CATCH_UP_MS), so the read answers from what the node has and says so.
   */
  async catchUp(): Promise<string | undefined> {
    if (this.options.soleWriter || this.closed) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`it took more than ${CATCH_UP_MS / 1000} s`), CATCH_UP_MS);
    });
    const caughtUp = this.freshFollow().then(
      () => this.sharing,
      (err: Error) => err.message,
    );
    try {
      const why = await Promise.race([caughtUp, late]);
      if (why === undefined) return undefined;
      return `this node could not read the registry's newest changes (${why}): the answer may miss what other nodes changed in the last moments`;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Skills this node has indexed whose vectors the node that took their REGISTER has not stored yet. */
  awaitingVectors(): number {
    return this.vectors ? this.awaiting.size : 0;
  }

  /** Read in memory, after catchUp(); a registration another node wrote in the last moments may not be here yet. */
  select(selector: AgentSelector, nowMs: number): Promise<AgentRow[]> {
    const rows: AgentRow[] = [];
    for (const entry of this.registrations.matching({}, nowMs)) {
      const named =
        entry.mailbox === selector.mailbox || (selector.name !== undefined && entry.name === selector.name);
      if (named && (selector.owner === undefined || entry.record.owner === selector.owner)) {
        rows.push(entry.record);
      }
    }
    return Promise.resolve(rows);
  }

  /** This node's own docs without a vector, and docs whose node never embedded them. */
  async docsToEmbed(model: string, afterId: number, limit: number): Promise<StoredDoc[]> {
    const { rows } = await this.read<DocDbRow>(
      `SELECT ${DOC_COLUMNS} FROM registry_docs
       WHERE id > $1 AND (vec_model IS NULL OR vec_model <> $2 OR vector IS NULL) AND (node = $3 OR created_ms < $4)
       ORDER BY id LIMIT $5`,
      [afterId, model, this.options.node, Date.now() - ORPHAN_AFTER_MS, limit],
    );
    return rows.map(toStoredDoc);
  }

  async markEmbedded(ids: number[], model: string): Promise<number[]> {
    const { rows } = await this.read<{ id: number }>(
      "UPDATE registry_docs SET vec_model = $2 WHERE id = ANY($1::bigint[]) RETURNING id",
      [ids, model],
    );
    return rows.map((r) => r.id);
  }

  async resetEmbedded(): Promise<void> {
    await this.read(
      "UPDATE registry_docs SET vec_model = NULL, vector = NULL WHERE vec_model IS NOT NULL",
      [],
    );
  }

  async embeddedSummary(): Promise<{ models: string[]; count: number }> {
    const { rows } = await this.read<{ vec_model: string; n: number }>(
      "SELECT vec_model, count(*)::int AS n FROM registry_docs WHERE vec_model IS NOT NULL AND vector IS NOT NULL GROUP BY vec_model",
      [],
    );
    return { models: rows.map((r) => r.vec_model), count: rows.reduce((sum, r) => sum + r.n, 0) };
  }

  /** Done by one node at a time (the registry-expiry lock holder); the others learn it by following. */
  async purgeExpired(nowMs: number): Promise<Removed> {
    if (!(await this.expiryLock.held())) return { mailboxes: [], docIds: [] };
    return this.removeWhere("registry purge failed", async (c) => {
      const { rows } = await c.query<{ mailbox: string }>(
        "SELECT mailbox FROM registry_agents WHERE expires_ms IS NOT NULL AND expires_ms <= $1 LIMIT 1000",
        [nowMs],
      );
      return rows.map((r) => r.mailbox);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.following?.catch(() => {});
    await this.expiryLock.close();
  }

  /**
   * A follow that starts after this call: the one in flight may have read the newest change
   * before a write the caller saw committed, so callers arriving meanwhile share the next one.
   */
  private freshFollow(): Promise<void> {
    if (this.following === undefined) return this.follow();
    const settled = () => {};
    this.queued ??= this.following.then(settled, settled).then(() => {
      this.queued = undefined;
      return this.follow();
    });
    return this.queued;
  }

  /** Reads the changes after the last one seen and applies them to the in-memory indexes. */
  private follow(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.following ??= this.applyChanges().finally(() => {
      this.following = undefined;
    });
    return this.following;
  }

  private async applyChanges(): Promise<void> {
    const after = this.followed;
    const { rows } = await this.read<{ newest: number | null }>(NEWEST_CHANGE, []);
    if ((rows[0]?.newest ?? 0) <= after) return;
    // One snapshot: a change committed between two of these reads (a heartbeat moving a row's
    // change number past the newest) would otherwise hide a row below it.
    const { newest, agents, removals, docs } = await this.snapshot(async (c) => {
      const position = await c.query<{ newest: number | null }>(NEWEST_CHANGE);
      const agents = await c.query<AgentDbRow>(
        "SELECT * FROM registry_agents WHERE change > $1 ORDER BY change",
        [after],
      );
      const removals = await c.query<{ mailbox: string; change: number }>(
        "SELECT mailbox, change FROM registry_removals WHERE change > $1 ORDER BY change",
        [after],
      );
      const reindex = agents.rows.filter((row) => row.docs_change > after).map((row) => row.mailbox);
      const docs = new Map<string, DocDbRow[]>();
      if (reindex.length > 0) {
        const found = await c.query<DocDbRow>(
          `SELECT ${DOC_COLUMNS}, vector FROM registry_docs WHERE mailbox = ANY($1::text[]) ORDER BY id`,
          [reindex],
        );
        for (const row of found.rows) docs.set(row.mailbox, [...(docs.get(row.mailbox) ?? []), row]);
      }
      return { newest: position.rows[0]?.newest ?? 0, agents, removals, docs };
    });
    type Event = { change: number; apply: () => Promise<void> | void };
    const events: Event[] = [
      ...removals.rows.map((r) => ({
        change: r.change,
        apply: async () => {
          if ((this.changeOf.get(r.mailbox) ?? 0) >= r.change) return;
          this.unindex(r.mailbox);
          this.changeOf.set(r.mailbox, r.change);
          await this.vectors?.delete({ agents: [r.mailbox] });
        },
      })),
      ...agents.rows.map((row) => ({
        change: row.change,
        apply: async () => {
          const known = this.changeOf.get(row.mailbox) ?? 0;
          if (known >= row.change) return;
          this.changeOf.set(row.mailbox, row.change);
          const entry = this.registrations.get(row.mailbox);
          if (entry && known >= row.docs_change) {
            // A heartbeat: the docs did not change.
            this.registrations.touch(entry, row.last_seen_ms, row.status ?? "");
            entry.record = toAgent(row);
            return;
          }
          const own = docs.get(row.mailbox) ?? [];
          const previous = entry?.docIds ?? [];
          this.unindex(row.mailbox);
          this.index(
            toAgent(row),
            own.map((d) => d.id),
            own.map(toStoredDoc),
          );
          if (previous.length > 0) await this.vectors?.delete({ ids: previous });
          for (const d of own) if (!d.vector) this.awaiting.add(d.id);
          const items = own
            .filter((d) => d.vector)
            .map((d) => ({ id: d.id, agent: d.mailbox, vector: vectorOf(d.vector!) }));
          if (items.length === 0) return;
          if (this.vectors) await this.vectors.upsert(items);
          else this.unshared.push(...items);
        },
      })),
    ].sort((a, b) => a.change - b.change);
    for (const event of events) await event.apply();
    // The snapshot held every change up to its newest: none below it can appear later.
    this.followed = Math.max(this.followed, newest);
  }

  /** Drops a registration from memory, and its docs from those awaiting vectors. */
  protected override unindex(mailbox: string): void {
    for (const id of this.registrations.get(mailbox)?.docIds ?? []) this.awaiting.delete(id);
    super.unindex(mailbox);
  }

  /**
   * Stores the vectors the indexer computed, and tells the other nodes (the docs changed).
   * Resolves to the ids of docs that were gone (replaced by a later REGISTER).
   */
  private async saveVectors(items: VectorItem[]): Promise<number[]> {
    if (items.length === 0) return [];
    const stored = await this.write("registry write failed", async (c) => {
      // Docs another node replaced meanwhile (a REGISTER again) are gone: their vectors are not stored.
      const stored = await c.query<{ id: number; mailbox: string }>(
        `UPDATE registry_docs d SET vector = v.vector FROM unnest($1::bigint[], $2::bytea[]) AS v(id, vector)
         WHERE d.id = v.id RETURNING d.id, d.mailbox`,
        [
          items.map((i) => i.id),
          items.map((i) => Buffer.from(i.vector.buffer, i.vector.byteOffset, i.vector.byteLength)),
        ],
      );
      if (stored.rows.length === 0) return stored.rows;
      const { rows } = await c.query<{ mailbox: string; change: number }>(
        `UPDATE registry_agents SET change = n.c, docs_change = n.c
         FROM (SELECT nextval('registry_changes') AS c) AS n
         WHERE mailbox = ANY($1::text[]) RETURNING mailbox, change`,
        [[...new Set(stored.rows.map((r) => r.mailbox))]],
      );
      // Our own indexes hold these docs: only the others need to reload.
      for (const { mailbox, change } of rows) {
        if (this.registrations.get(mailbox)) this.changeOf.set(mailbox, change);
      }
      return stored.rows;
    });
    const kept = new Set(stored.map((r) => Number(r.id)));
    return items.filter((i) => !kept.has(i.id)).map((i) => i.id);
  }

  /** The mailboxes a selector names; with `owner`, only that user's registrations. */
  private async selected(c: pg.PoolClient, selector: AgentSelector): Promise<string[]> {
    const { rows } = await c.query<{ mailbox: string }>(
      "SELECT mailbox FROM registry_agents WHERE (mailbox = $1 OR name = $2) AND ($3::text IS NULL OR owner = $3)",
      [selector.mailbox ?? null, selector.name ?? null, selector.owner ?? null],
    );
    return rows.map((r) => r.mailbox);
  }

  private async removeWhere(
    context: string,
    choose: (c: pg.PoolClient) => Promise<string[]>,
  ): Promise<Removed> {
    const removed = await this.write(context, async (c) => {
      const mailboxes = await choose(c);
      if (mailboxes.length === 0) return { mailboxes, docIds: [] as number[], changes: [] as number[] };
      const docIds = (
        await c.query<{ id: number }>(
          "DELETE FROM registry_docs WHERE mailbox = ANY($1::text[]) RETURNING id",
          [mailboxes],
        )
      ).rows.map((r) => r.id);
      await c.query("DELETE FROM registry_agents WHERE mailbox = ANY($1::text[])", [mailboxes]);
      const { rows } = await c.query<{ change: number }>(
        `INSERT INTO registry_removals (mailbox, change)
         SELECT m, nextval('registry_changes') FROM unnest($1::text[]) AS m RETURNING change`,
        [mailboxes],
      );
      return { mailboxes, docIds, changes: rows.map((r) => r.change) };
    });
    removed.mailboxes.forEach((mailbox, i) => {
      this.unindex(mailbox);
      this.changeOf.set(mailbox, removed.changes[i] ?? 0);
    });
    return { mailboxes: removed.mailboxes, docIds: removed.docIds };
  }

  private async read<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.options.pool.query<R>(text, values);
    } catch (err) {
      throw postgresError(err, "registry read failed", this.options.where);
    }
  }

  /** Reads in one REPEATABLE READ snapshot. */
  private snapshot<T>(body: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.transaction(
      "registry read failed",
      ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"],
      body,
    );
  }

  /** A registry write: one transaction holding the registry's advisory lock (change numbers in commit order). */
  private write<T>(context: string, body: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.transaction(
      context,
      ["BEGIN", { text: "SELECT pg_advisory_xact_lock(hashtext($1))", values: [this.lockName] }],
      body,
    );
  }

  /** Runs `body` in a transaction opened by `begin`; rolled back on any error, which is mapped to ours. */
  private async transaction<T>(
    context: string,
    begin: (string | pg.QueryConfig)[],
    body: (c: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    try {
      return await withCheckedOutClient(this.options.pool, async (client) => {
        try {
          for (const statement of begin) await client.query(statement);
          const result = await body(client);
          await client.query("COMMIT");
          return result;
        } catch (err) {
          await client.query("ROLLBACK").catch(() => {});
          throw err;
        }
      });
    } catch (err) {
      throw postgresError(err, context, this.options.where);
    }
  }
}
