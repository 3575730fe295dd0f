import { priorityRank } from "@mq9/protocol";
import pg from "pg";
import { type Logger, silentLogger } from "../../logger.js";
import { lettersByGroup } from "../dead-letter-rows.js";
import type { InboxBinding, InboxBindingsStore } from "../inbox-bindings.js";
import { type GroupLeaseReport, type LeaseInspection, leaseInfoOf } from "../lease-inspection.js";
import type { LeaseRelease } from "../lease-release.js";
import type { OneTripRequests } from "../one-trip-requests.js";
import type { SharedDatabase } from "../shared-database.js";
import { StorageError } from "../storage-error.js";
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
} from "../store.js";
import type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  OwnedMailboxes,
  PurgeFilter,
  StoreInspection,
  StoreTotals,
} from "../store-inspection.js";
import { withCheckedOutClient } from "./checked-out-client.js";
import { ClusterLock, HeldDuties } from "./cluster-lock.js";
import { DatabaseProbe } from "./database-probe.js";
import {
  insertMessages,
  MESSAGE_COLUMNS,
  type MessageInsert,
  type MessageRow,
  reserveIds,
  sendBatchValues,
  storedMessage,
  takeWithinBudget,
} from "./message-rows.js";
import { endSessionsOf, postgresApplicationName } from "./node-sessions.js";
import {
  describeDatabase,
  failedOnServer,
  isRetryable,
  outcomeUnknownError,
  postgresError,
} from "./postgres-errors.js";
import { PostgresInspection } from "./postgres-inspection.js";
import { migrate } from "./postgres-migrate.js";
import { POSTGRES_SCHEMA_VERSION } from "./postgres-schema.js";
import {
  type DeadLetterRow,
  deadLetterOfRow,
  deadLettersQuery,
  type GroupPolicyRow,
  groupLeaseRowsQuery,
  groupPolicyQuery,
  heldLeaseOf,
  type LeaseRow,
  nakQuery,
  nakResult,
  policyOfRow,
  releaseMemberQuery,
  settleQuery,
} from "./redelivery-queries.js";
import { SendCall } from "./send-call.js";
import { SendLane } from "./send-lane.js";

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (libpq-style URL; `?sslmode=…` is honoured). */
  url: string;
  /** The PostgreSQL schema that holds mq9's tables; created when missing (default "mq9"). */
  schema?: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** A query that takes longer fails (default 4000 ms, below the SDKs' 5 s request timeout). */
  queryTimeoutMs?: number;
  /** Giving up on a new connection (default 3000 ms). */
  connectTimeoutMs?: number;
  /** TLS to the database: CA and client certificates, as node's tls options take them. */
  ssl?: pg.ClientConfig["ssl"];
  /**
   * The node process whose connections these are (a cluster node's instance, `<node id>/<token>`):
   * named after it on the server, so another node can end them when this one hangs.
   */
  instance?: string;
  logger?: Logger;
}

const LIVE_MESSAGE = "(m.expires_ms IS NULL OR m.expires_ms > $now)";
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const DEADLOCK_RETRIES = 3;

interface MailboxRow {
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

/** int8 columns arrive as numbers: every id and time we keep fits in 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/** Replaces $now (and other $names) with positional parameters, so the SQL below reads. */
function named(text: string, names: readonly string[]): string {
  return text.replace(/\$([a-z][a-z0-9]*)/g, (whole, name: string) => {
    const at = names.indexOf(name);
    return at < 0 ? whole : `$${at + 1}`;
  });
}

/** No keys, no idempotency keys, nothing delayed, in any mailboxes: what appendPlain takes. */
function isPlainBatch(batch: readonly NewMessage[]): boolean {
  if (batch.length === 0) return false;
  for (const m of batch) {
    if (m.key !== undefined || m.dueMs !== undefined || m.dedup !== undefined) return false;
  }
  return true;
}

/**
 * Drops the id reservations no append can follow (see mq9_drop_dead_reservations): a stateless
 * read stops at a mailbox's first pending one, so one left by a dead node or a server restart
 * would hold it back. At open and with each health probe.
 */
async function dropDeadReservations(client: pg.Pool | pg.PoolClient): Promise<void> {
  await client.query("SELECT mq9_drop_dead_reservations(NULL)");
}

/** A mailbox's idempotency key, as one string. */
const keyOf = (mailbox: string, key: string) => `${mailbox}\u0000${key}`;

/**
 * The shared store for clusters: every mailbox, message, group, lease and ACK is a row in
 * PostgreSQL, so any number of brokers can serve the same mailboxes. Each method is one
 * transaction; a SEND batch (the engine's group commit) is one transaction, answered after
 * its COMMIT. Leases are rows claimed under the group's row lock, so two members of a group
 * never hold the same unexpired lease, whichever nodes they are on. Passes
 * test/store-conformance.ts against a real PostgreSQL.
 */
export class PostgresStore implements Store, StoreInspection, LeaseRelease, LeaseInspection, OneTripRequests {
  private readonly where: string;
  private readonly background: ClusterLock;
  /** The once-per-cluster works this process does now, for the cluster's roster of nodes. */
  readonly duties = new HeldDuties();
  /** Every once-per-cluster lock made through this store, given up when the schema moves on. */
  private readonly locks: ClusterLock[] = [];
  /** The format a newer mq9 migrated the schema to while this store served it. */
  private migratedTo?: number;
  private readonly inspection = new PostgresInspection(
    async (text, values) => (await this.run("cannot read the store", { text, values })).rows as never[],
    (body) => this.transaction("cannot purge the mailbox", body),
  );
  /** Whether the database answers, for /healthz (started by watch). */
  private readonly probe = new DatabaseProbe(
    () => this.ping(),
    () => this.refusal(),
  );
  private closed = false;
  /** The bound reply inboxes, in the table inbox_bindings. */
  private readonly inboxes: InboxBindingsStore = {
    load: async () => {
      const { rows } = await this.run<{ id: string; username: string }>(
        "cannot read the bound reply inboxes",
        { text: "SELECT id, username FROM inbox_bindings" },
      );
      return rows.map((row): InboxBinding => ({ id: row.id, user: row.username }));
    },
    save: (bindings) =>
      this.transaction("cannot save the bound reply inboxes", async (c) => {
        await c.query("DELETE FROM inbox_bindings");
        if (bindings.length === 0) return;
        await c.query(
          "INSERT INTO inbox_bindings (id, username) SELECT * FROM unnest($1::text[], $2::text[])",
          [bindings.map((b) => b.id), bindings.map((b) => b.user)],
        );
      }),
  };
  /** The connection SEND batches of plain messages run on. */
  private readonly sendLane: SendLane;
  /** Shared by a cluster; appends are statements on the database server, overlapped with replies. */
  readonly capabilities: StoreCapabilities = { shared: true, appendsElsewhere: true };

  private constructor(
    private readonly pool: pg.Pool,
    private readonly clientConfig: pg.ClientConfig,
    readonly schema: string,
    private readonly logger: Logger,
    url: string,
  ) {
    this.where = describeDatabase(url);
    this.background = this.clusterLock("expiry", "expiry");
    this.sendLane = new SendLane(pool, clientConfig);
  }

  /** Connects, creates or migrates the schema, and returns the store; fails with a StorageError saying why. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = options.schema ?? "mq9";
    if (!SCHEMA_NAME.test(schema)) {
      throw new StorageError(
        `bad PostgreSQL schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _`,
        "STORE_CONFIG",
      );
    }
    const logger = options.logger ?? silentLogger;
    const clientConfig: pg.ClientConfig = {
      connectionString: options.url,
      ssl: options.ssl,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 3_000,
      query_timeout: options.queryTimeoutMs ?? 4_000,
      options: `-c search_path=${schema}`,
      application_name: options.instance ? postgresApplicationName(options.instance) : "mq9",
      types,
    };
    const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10, keepAlive: true });
    // An idle connection the server dropped: the pool replaces it, the next query reports it.
    pool.on("error", (err) => logger.warn({ err }, "postgres: an idle connection failed"));
    const where = describeDatabase(options.url);
    try {
      await withCheckedOutClient(pool, async (client) => {
        await migrate(client, schema, logger);
        await dropDeadReservations(client);
      });
    } catch (err) {
      await pool.end().catch(() => {});
      throw postgresError(err, `cannot open the PostgreSQL store (schema ${schema})`, where, true);
    }
    return new PostgresStore(pool, clientConfig, schema, logger, options.url);
  }

  async createMailbox(record: MailboxRecord, nowMs: number): Promise<boolean> {
    return this.transaction("cannot create the mailbox", async (c) => {
      // An expired mailbox is replaced, and its counter carried on: ids are never given out twice.
      const old = await c.query<{ next_id: number }>(
        "DELETE FROM mailboxes WHERE address = $1 AND expires_ms IS NOT NULL AND expires_ms <= $2 RETURNING next_id",
        [record.address, nowMs],
      );
      const inserted = await c.query(
        `INSERT INTO mailboxes (address, ttl_s, description, created_ms, expires_ms, next_id, owner, max_deliver, dead_letter)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (address) DO NOTHING RETURNING id`,
        [
          record.address,
          record.ttlSeconds,
          record.desc,
          record.createdMs,
          record.expiresMs ?? null,
          old.rows[0]?.next_id ?? 0,
          record.owner ?? null,
          record.maxDeliver ?? null,
          record.deadLetter ?? null,
        ],
      );
      return inserted.rowCount === 1;
    });
  }

  async getMailbox(address: string, nowMs: number): Promise<MailboxRecord | undefined> {
    const { rows } = await this.run<MailboxRow>("cannot read the mailbox", {
      name: "mq9-get-mailbox",
      text: "SELECT * FROM mailboxes WHERE address = $1 AND (expires_ms IS NULL OR expires_ms > $2)",
      values: [address, nowMs],
    });
    const row = rows[0];
    if (!row) return undefined;
    return {
      address: row.address,
      ttlSeconds: row.ttl_s,
      desc: row.description,
      createdMs: row.created_ms,
      expiresMs: row.expires_ms ?? undefined,
      owner: row.owner ?? undefined,
      maxDeliver: row.max_deliver ?? undefined,
      deadLetter: row.dead_letter ?? undefined,
    };
  }

  async append(batch: readonly NewMessage[], nowMs: number): Promise<AppendResult[]> {
    if (isPlainBatch(batch)) return this.appendPlain(batch, nowMs);
    const keyed = batch.some((m) => m.dedup !== undefined);
    return this.transaction("cannot store the message", async (c) => {
      // The ids that keys of the batch already stand for; the batch's mailboxes stay locked, so
      // no other SEND with one of those keys commits meanwhile.
      const taken = keyed ? await this.takenKeys(c, batch, nowMs) : new Map<string, number>();
      const repeats = new Map<number, number>();
      // Ids each mailbox must hand out (delayed messages and repeats take none now).
      const counts = new Map<string, number>();
      batch.forEach((m, i) => {
        // A repeat takes no id, but its mailbox must still be found live.
        counts.set(m.mailbox, counts.get(m.mailbox) ?? 0);
        if (m.dedup !== undefined) {
          const key = keyOf(m.mailbox, m.dedup.key);
          const original = taken.get(key);
          if (original !== undefined) {
            repeats.set(i, original);
            return;
          }
          // A later message of the batch with the key repeats this one; -2 until it has its id.
          taken.set(key, -2);
        }
        counts.set(m.mailbox, (counts.get(m.mailbox) ?? 0) + (m.dueMs === undefined ? 1 : 0));
      });
      const boxes = await this.lockForAppend(c, counts, nowMs);
      const next = new Map<string, number>();
      for (const [address, box] of boxes) next.set(address, box.first);
      const rows: MessageInsert[] = [];
      const delayed: (MessageInsert & { dueMs: number })[] = [];
      const keys: { mbox: number; key: string; id: number; untilMs: number }[] = [];
      const outcome = batch.map((m, i): AppendResult => {
        const box = boxes.get(m.mailbox);
        if (!box) return { missingMailbox: true };
        const repeated = repeats.get(i);
        if (repeated !== undefined) {
          // Within the batch: the original is the first message with the key.
          const id =
            repeated === -2
              ? (keys.find((k) => k.mbox === box.id && k.key === m.dedup?.key)?.id ?? -1)
              : repeated;
          return { id, duplicate: true };
        }
        const row: MessageInsert = {
          mbox: box.id,
          id: -1,
          priority: priorityRank[m.priority],
          key: m.key ?? null,
          tags: m.tags ? JSON.stringify(m.tags) : null,
          header: m.header ?? null,
          payload: m.payload,
          createdMs: m.sentMs,
          expiresMs: m.expiresMs ?? null,
        };
        if (m.dueMs !== undefined) delayed.push({ ...row, dueMs: m.dueMs });
        else {
          row.id = next.get(m.mailbox) ?? 0;
          next.set(m.mailbox, row.id + 1);
          rows.push(row);
        }
        if (m.dedup) keys.push({ mbox: box.id, key: m.dedup.key, id: row.id, untilMs: m.dedup.untilMs });
        return { id: row.id };
      });
      if (rows.length > 0) await insertMessages(c, rows);
      if (delayed.length > 0) await this.insertDelayed(c, delayed);
      if (keys.length > 0) await this.insertKeys(c, keys, nowMs);
      return outcome;
    });
  }

  /**
   * Locks the batch's mailboxes (in id order), then reads which of its idempotency keys they
   * remember: by keyOf, the msg_id each stands for. Read after the lock, so a SEND with the same
   * key that held it has committed, and is seen.
   */
  private async takenKeys(
    c: pg.PoolClient,
    batch: readonly NewMessage[],
    nowMs: number,
  ): Promise<Map<string, number>> {
    const addresses = [...new Set(batch.map((m) => m.mailbox))];
    await c.query({
      name: "mq9-lock-mailboxes",
      text: "SELECT id FROM mailboxes WHERE address = ANY($1::text[]) ORDER BY id FOR UPDATE",
      values: [addresses],
    });
    const keyed = batch.filter((m) => m.dedup !== undefined);
    const { rows } = await c.query<{ address: string; id_key: string; msg_id: number }>({
      name: "mq9-taken-keys",
      text: `SELECT b.address, k.id_key, k.msg_id
             FROM unnest($1::text[], $2::text[]) AS q(address, id_key)
             JOIN mailboxes b ON b.address = q.address
             JOIN send_keys k ON k.mbox = b.id AND k.id_key = q.id_key
             WHERE k.until_ms > $3`,
      values: [keyed.map((m) => m.mailbox), keyed.map((m) => m.dedup?.key), nowMs],
    });
    return new Map(rows.map((row) => [keyOf(row.address, row.id_key), row.msg_id]));
  }

  /**
   * Remembers the batch's idempotency keys, taking over keys whose window has passed. A key that
   * is still live fails the transaction (the lock in takenKeys should make that impossible):
   * storing the message a second time would be worse than an error.
   */
  private async insertKeys(
    c: pg.PoolClient,
    keys: readonly { mbox: number; key: string; id: number; untilMs: number }[],
    nowMs: number,
  ): Promise<void> {
    const { rowCount } = await c.query({
      name: "mq9-insert-send-keys",
      text: `INSERT INTO send_keys (mbox, id_key, msg_id, until_ms)
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[])
             ON CONFLICT (mbox, id_key) DO UPDATE SET msg_id = excluded.msg_id, until_ms = excluded.until_ms
             WHERE send_keys.until_ms <= $5`,
      values: [
        keys.map((k) => k.mbox),
        keys.map((k) => k.key),
        keys.map((k) => k.id),
        keys.map((k) => k.untilMs),
        nowMs,
      ],
    });
    if (rowCount !== keys.length) {
      throw new StorageError(
        "an idempotency key of the batch was taken meanwhile; nothing was stored",
        "STORAGE_FAILED",
      );
    }
  }

  async nextMessageId(mailbox: string): Promise<number> {
    const { rows } = await this.run<{ next_id: number }>("cannot read the mailbox", {
      name: "mq9-next-id",
      text: "SELECT next_id FROM mailboxes WHERE address = $1",
      values: [mailbox],
    });
    return rows[0]?.next_id ?? 0;
  }

  async firstIdCreatedAtOrAfter(mailbox: string, createdMs: number): Promise<number> {
    const { rows } = await this.run<{ next_id: number; first: number | null }>("cannot read the mailbox", {
      text: `SELECT b.next_id, (SELECT min(msg_id) FROM messages m WHERE m.mbox = b.id AND m.created_ms >= $2) AS first
             FROM mailboxes b WHERE b.address = $1`,
      values: [mailbox, createdMs],
    });
    const row = rows[0];
    if (!row) return 0;
    return row.first ?? row.next_id;
  }

  async read(mailbox: string, start: StartPosition, options: ReadOptions): Promise<StoredMessage[]> {
    const perClass = (rank: number) =>
      `(SELECT ${MESSAGE_COLUMNS} FROM messages m
        WHERE m.mbox = (SELECT id FROM box) AND m.priority = ${rank} AND m.msg_id >= $from
          AND m.msg_id < (SELECT horizon FROM box)
          AND ${LIVE_MESSAGE} AND m.created_ms >= $since ORDER BY m.msg_id LIMIT $limit)`;
    const { rows } = await this.run<MessageRow>("cannot read messages", {
      name: "mq9-read",
      text: named(
        // Up to the horizon: past an id still reserved, a lower one may yet appear (see mq9_horizon).
        `WITH box AS (
           SELECT b.id, least(b.next_id, (SELECT min(r.first_id) FROM append_reservations r WHERE r.mbox = b.id)) AS horizon
           FROM mailboxes b WHERE b.address = $address AND (b.expires_ms IS NULL OR b.expires_ms > $now))
         ${[0, 1, 2].map(perClass).join(" UNION ALL ")} ORDER BY priority, msg_id`,
        ["address", "now", "from", "since", "limit"],
      ),
      values: [mailbox, options.nowMs, start.fromId, start.fromCreatedMs ?? 0, options.limit],
    });
    return takeWithinBudget(rows, options.limit, options.maxBytes).map(storedMessage);
  }

  async hasGroup(mailbox: string, group: string): Promise<boolean> {
    const { rows } = await this.run("cannot read the group", {
      name: "mq9-has-group",
      text: "SELECT 1 FROM groups g JOIN mailboxes b ON b.id = g.mbox WHERE b.address = $1 AND g.name = $2",
      values: [mailbox, group],
    });
    return rows.length > 0;
  }

  /**
   * One round trip: mq9_claim (postgres-schema.ts) finds the mailbox, locks the group, picks,
   * budgets and leases; nothing when the mailbox is missing or expired.
   */
  claim(mailbox: string, group: string, options: ClaimOptions): Promise<StoredMessage[]> {
    return this.claimAt(mailbox, group, options.start.fromId, options);
  }

  claimFromNext(
    mailbox: string,
    group: string,
    options: Omit<ClaimOptions, "start">,
  ): Promise<StoredMessage[]> {
    return this.claimAt(mailbox, group, null, options);
  }

  /**
   * One round trip: mq9_ack (postgres-schema.ts), batch-aware. It deletes its claim's lease rows
   * without the group's row lock, so it neither waits for nor holds up the group's next claim.
   */
  /** One statement: the lease row leaves its batch and is let go (see redelivery-queries.ts). */
  async nak(mailbox: string, group: string, msgId: number, options: NakOptions): Promise<NakResult> {
    const { rows } = await this.write<{ dead: boolean; delivery_count: number; max_deliver: number }>(
      "cannot give the message back",
      nakQuery(mailbox, group, msgId, options),
    );
    return nakResult(rows);
  }

  async groupLeases(
    mailbox: string,
    group: string,
    nowMs: number,
    limit: number,
  ): Promise<GroupLeaseReport | undefined> {
    const { rows } = await this.run<GroupPolicyRow>(
      "cannot read the group",
      groupPolicyQuery(mailbox, group, nowMs),
    );
    const row = rows[0];
    if (!row) return undefined;
    const policy = policyOfRow(row);
    const leases = await this.run<LeaseRow>(
      "cannot read the group's leases",
      groupLeaseRowsQuery(row.mbox, group, limit),
    );
    return {
      policy,
      leases: leases.rows.map((lease) => leaseInfoOf(heldLeaseOf(lease), policy, nowMs)),
      redelivered: Number(leases.rows[0]?.redelivered ?? 0),
      deadLettered: row.dead_lettered,
    };
  }

  async releaseMemberLeases(
    mailbox: string,
    group: string,
    member: string | undefined,
    nowMs: number,
  ): Promise<number | undefined> {
    if (!(await this.hasGroup(mailbox, group))) return undefined;
    const { rowCount } = await this.write(
      "cannot release the leases",
      releaseMemberQuery(mailbox, group, member, nowMs),
    );
    return rowCount ?? 0;
  }

  async deadLetters(nowMs: number, limit: number): Promise<DeadLetter[]> {
    const { rows } = await this.run<DeadLetterRow>(
      "cannot read dead letters",
      deadLettersQuery(nowMs, limit),
    );
    return rows.map(deadLetterOfRow);
  }

  async settleDeadLetters(
    letters: readonly Pick<DeadLetter, "mailbox" | "group" | "message">[],
    nowMs: number,
  ): Promise<void> {
    for (const { mailbox, group, ids } of lettersByGroup(letters)) {
      await this.call("cannot settle dead letters", settleQuery(mailbox, group, ids, nowMs));
    }
  }

  async ack(mailbox: string, group: string, msgId: number, nowMs: number): Promise<boolean> {
    const { rows } = await this.write<{ acked: boolean }>("cannot acknowledge the message", {
      name: "mq9-ack",
      text: "SELECT mq9_ack($1, $2, $3, $4) AS acked",
      values: [mailbox, group, msgId, nowMs],
    });
    return rows[0]?.acked === true;
  }

  async releaseLeases(
    mailbox: string,
    group: string,
    msgIds: readonly number[],
    leaseUntilMs: number,
  ): Promise<number> {
    if (msgIds.length === 0) return 0;
    // No group lock needed: a claim reading the rows before this commits just does not see them
    // yet, and its own lease upsert waits for these row locks.
    const { rowCount } = await this.run("cannot give the leases back", {
      name: "mq9-release-leases",
      // The reply reached no one: that delivery does not count.
      text: `UPDATE deliveries d SET lease_until_ms = 0, delivery_count = greatest(d.delivery_count - 1, 0) FROM mailboxes b
             WHERE b.address = $1 AND d.mbox = b.id AND d.grp = $2 AND d.msg_id = ANY($3::bigint[])
               AND NOT d.acked AND d.lease_until_ms = $4`,
      values: [mailbox, group, msgIds, leaseUntilMs],
    });
    return rowCount ?? 0;
  }

  async query(mailbox: string, options: StoreQuery): Promise<StoredMessage[]> {
    if (options.limit <= 0) return [];
    const where = ["m.mbox = b.id", LIVE_MESSAGE];
    const names = ["address", "now", "limit"];
    const values: unknown[] = [mailbox, options.nowMs, options.limit];
    if (options.key !== undefined) {
      where.push("m.msg_key = $key");
      names.push("key");
      values.push(options.key);
    }
    if (options.createdFromMs !== undefined) {
      where.push("m.created_ms >= $since");
      names.push("since");
      values.push(options.createdFromMs);
    }
    if (options.priority !== undefined) {
      where.push("m.priority = $priority");
      names.push("priority");
      values.push(priorityRank[options.priority]);
    }
    if (options.beforeId !== undefined) {
      where.push("m.msg_id < $before");
      names.push("before");
      values.push(options.beforeId);
    }
    if (options.tags !== undefined) {
      where.push("m.tags ?| $tags::text[]");
      names.push("tags");
      values.push(options.tags);
    }
    const { rows } = await this.run<MessageRow>("cannot query messages", {
      text: named(
        `SELECT ${MESSAGE_COLUMNS.replace(/(^|, )/g, "$1m.")} FROM mailboxes b, messages m
         WHERE b.address = $address AND (b.expires_ms IS NULL OR b.expires_ms > $now) AND ${where.join(" AND ")}
         ORDER BY m.msg_id DESC LIMIT $limit`,
        names,
      ),
      values,
    });
    return rows.reverse().map(storedMessage);
  }

  async deleteMessage(mailbox: string, msgId: number): Promise<boolean> {
    const { rows } = await this.write<{ deleted: number }>("cannot delete the message", {
      name: "mq9-delete",
      text: `WITH gone AS (
               DELETE FROM messages m USING mailboxes b
               WHERE b.address = $1 AND m.mbox = b.id AND m.msg_id = $2 RETURNING m.mbox, m.msg_id),
             leases AS (DELETE FROM deliveries d USING gone WHERE d.mbox = gone.mbox AND d.msg_id = gone.msg_id)
             SELECT count(*)::int AS deleted FROM gone`,
      values: [mailbox, msgId],
    });
    return (rows[0]?.deleted ?? 0) > 0;
  }

  /**
   * Every node may promote: each due row is taken by one of them (SKIP LOCKED), so a delayed
   * message appears once, at its time, whichever node stored it.
   */
  async promoteDue(nowMs: number): Promise<string[]> {
    return this.transaction("cannot promote delayed messages", async (c) => {
      const due = await c.query<MessageInsert & { due_ms: number; did: number; address: string }>({
        name: "mq9-take-due",
        text: `WITH taken AS (
                 DELETE FROM delayed WHERE id IN (
                   SELECT id FROM delayed WHERE due_ms <= $1 ORDER BY due_ms, id LIMIT 1000 FOR UPDATE SKIP LOCKED)
                 RETURNING *)
               SELECT t.id AS did, t.mbox, t.due_ms, t.priority, t.msg_key AS key, t.tags::text AS tags, t.header,
                      t.payload, t.expires_ms AS "expiresMs", b.address
               FROM taken t JOIN mailboxes b ON b.id = t.mbox ORDER BY t.due_ms, t.id`,
        values: [nowMs],
      });
      if (due.rows.length === 0) return [];
      const counts = new Map<number, number>();
      for (const row of due.rows) counts.set(row.mbox, (counts.get(row.mbox) ?? 0) + 1);
      const first = await reserveIds(c, counts);
      const rows: MessageInsert[] = [];
      const addresses = new Set<string>();
      for (const row of due.rows) {
        const id = first.get(row.mbox);
        if (id === undefined) continue;
        first.set(row.mbox, id + 1);
        addresses.add(row.address);
        rows.push({
          mbox: row.mbox,
          id,
          priority: row.priority,
          key: row.key,
          tags: row.tags,
          header: row.header,
          payload: row.payload,
          createdMs: nowMs,
          expiresMs: row.expiresMs,
        });
      }
      if (rows.length > 0) await insertMessages(c, rows);
      return [...addresses];
    });
  }

  async nextDueMs(): Promise<number | undefined> {
    const { rows } = await this.run<{ due: number | null }>("cannot read delayed messages", {
      name: "mq9-next-due",
      text: "SELECT min(due_ms) AS due FROM delayed",
      values: [],
    });
    return rows[0]?.due ?? undefined;
  }

  /** Done by one node of the cluster at a time: the holder of the expiry advisory lock. */
  async purgeExpired(nowMs: number): Promise<PurgeResult> {
    if (!(await this.background.held())) return { mailboxes: [], messages: 0 };
    return this.transaction("cannot purge expired data", async (c) => {
      const boxes = await c.query<{ address: string }>(
        "DELETE FROM mailboxes WHERE expires_ms IS NOT NULL AND expires_ms <= $1 RETURNING address",
        [nowMs],
      );
      const messages = await c.query<{ n: number }>(
        `WITH gone AS (DELETE FROM messages WHERE expires_ms IS NOT NULL AND expires_ms <= $1 RETURNING mbox, msg_id),
              leases AS (DELETE FROM deliveries d USING gone WHERE d.mbox = gone.mbox AND d.msg_id = gone.msg_id)
         SELECT count(*)::int AS n FROM gone`,
        [nowMs],
      );
      await c.query({
        name: "mq9-sweep-send-keys",
        text: "DELETE FROM send_keys WHERE until_ms <= $1",
        values: [nowMs],
      });
      // Left by SENDs that failed or nodes that died, in mailboxes no group visits (see mq9_horizon).
      await c.query("SELECT mq9_drop_dead_reservations(NULL)");
      return { mailboxes: boxes.rows.map((r) => r.address), messages: messages.rows[0]?.n ?? 0 };
    });
  }

  /**
   * The name of the mq9 cluster whose state this schema holds, random and fixed at its creation
   * (made again, once, should its row have been deleted).
   */
  async clusterId(): Promise<string> {
    const { rows } = await this.run<{ id: string }>("cannot read the cluster's name", {
      text: `WITH made AS (
               INSERT INTO mq9_cluster (id) VALUES (md5(random()::text || clock_timestamp()::text))
               ON CONFLICT (one) DO NOTHING RETURNING id)
             SELECT id FROM made UNION ALL SELECT id FROM mq9_cluster`,
      values: [],
    });
    return rows[0].id;
  }

  /**
   * This store's database for the layers above: the cluster's name and locks, and their own
   * tables in the same schema (the agent registry, see @mq9/registry) over this store's pool.
   * Close those users before the store.
   */
  /** In the table inbox_bindings of the schema. */
  inboxBindings(): InboxBindingsStore {
    return this.inboxes;
  }

  sharedDatabase(): SharedDatabase {
    return {
      kind: "postgres",
      clusterId: () => this.clusterId(),
      duties: this.duties,
      pool: this.pool,
      clusterLock: (name, what) => this.clusterLock(name, what),
      endSessionsOf: (instance) => endSessionsOf(this.pool, instance),
      schema: this.schema,
      logger: this.logger,
      where: this.where,
    };
  }

  /**
   * A cluster-wide lock for once-per-cluster work of higher layers (e.g. the orchestrator): one
   * holder at a time, released by PostgreSQL when the holder's connection ends.
   */
  clusterLock(name: string, what: string): ClusterLock {
    const key = `mq9:${this.schema}:${name}`;
    const lock = new ClusterLock(this.clientConfig, key, this.logger, what, this.duties.of(name));
    this.locks.push(lock);
    return lock;
  }

  mailboxStats(nowMs: number, options: MailboxStatsOptions): Promise<MailboxStats[]> {
    return this.inspection.mailboxStats(nowMs, options);
  }

  totals(nowMs: number): Promise<StoreTotals> {
    return this.inspection.totals(nowMs);
  }

  groupStats(address: string, nowMs: number): Promise<GroupStats[] | undefined> {
    return this.inspection.groupStats(address, nowMs);
  }

  mailboxOwners(nowMs: number, examples: number): Promise<OwnedMailboxes[]> {
    return this.inspection.mailboxOwners(nowMs, examples);
  }

  deleteMailbox(address: string, nowMs: number): Promise<boolean> {
    return this.inspection.deleteMailbox(address, nowMs);
  }

  purgeMailbox(address: string, nowMs: number, filter?: PurgeFilter): Promise<number | undefined> {
    return this.inspection.purgeMailbox(address, nowMs, filter);
  }

  resetGroup(address: string, group: string, fromId: number, nowMs: number): Promise<boolean> {
    return this.inspection.resetGroup(address, group, fromId, nowMs);
  }

  describe(): string {
    return `PostgreSQL (schema ${this.schema})`;
  }

  /** As of the last probe (see watch): unavailable while the database does not answer or the store refuses. */
  health(): StoreHealth {
    const serving = this.probe.serving;
    return { ok: serving, storage: serving ? "ok" : "unavailable", postgres: this.probe.report() };
  }

  /** Probes the database every two seconds (a gauge, and logs when it stops or starts answering). */
  watch(options: StoreWatchOptions): void {
    this.probe.watch(options);
  }

  /**
   * Whether the database answers; also notices a schema that a newer mq9 migrated since this
   * store opened (see refusal).
   */
  async ping(): Promise<boolean> {
    try {
      const { rows } = await this.pool.query<{ version: number }>("SELECT version FROM mq9_schema_version");
      const version = rows[0]?.version ?? POSTGRES_SCHEMA_VERSION;
      if (version > POSTGRES_SCHEMA_VERSION && this.migratedTo === undefined) await this.stepAside(version);
      else if (version === POSTGRES_SCHEMA_VERSION) await dropDeadReservations(this.pool);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Why this store refuses every request, once a newer mq9 migrated its schema: serving on by
   * the old format's rules would disagree with the new nodes' claims and ACKs.
   */
  refusal(): string | undefined {
    if (this.migratedTo === undefined) return undefined;
    return `the PostgreSQL schema ${this.schema} was migrated to format ${this.migratedTo} by a newer mq9 (this one runs format ${POSTGRES_SCHEMA_VERSION}): this broker no longer serves it; stop it and start the new version (docs/cluster.md, Upgrading)`;
  }

  /** Refuses every request from now on and hands the once-per-cluster work to the new nodes. */
  private async stepAside(version: number): Promise<void> {
    this.migratedTo = version;
    this.logger.error(`postgres: ${this.refusal()}`);
    await Promise.all(this.locks.map((lock) => lock.surrender()));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.probe.close();
    await this.background.close();
    await this.sendLane.close();
    await this.pool.end();
  }

  /** A claim whose new group starts at `fromId`, or at the mailbox's next id when null. */
  private async claimAt(
    mailbox: string,
    group: string,
    fromId: number | null,
    options: Omit<ClaimOptions, "start">,
  ): Promise<StoredMessage[]> {
    // A claim leases what it returns: left unanswered, it may have taken leases (outcome unknown).
    const { rows } = await this.write<MessageRow & { delivery_count: number }>("cannot fetch messages", {
      name: "mq9-claim",
      text: "SELECT * FROM mq9_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::bigint[])",
      values: [
        mailbox,
        group,
        fromId,
        options.nowMs,
        options.reset,
        options.limit,
        options.maxBytes,
        options.nowMs + options.leaseMs,
        options.member ?? null,
        options.policy?.maxDeliver ?? null,
        options.policy?.backoffMs ?? null,
      ],
    });
    return rows.map((row) => {
      const message = storedMessage(row);
      message.deliveryCount = row.delivery_count;
      return message;
    });
  }

  /**
   * The usual batch (no key, nothing delayed), in one call of mq9_send: one transaction that
   * locks its mailboxes' rows (in id order), takes their next ids and stores the messages, and
   * waits for its flush (postgres-schema.ts says why it no longer reserves ids apart).
   */
  private async appendPlain(batch: readonly NewMessage[], nowMs: number): Promise<AppendResult[]> {
    const context = "cannot store the message";
    this.assertOpen();
    const { values, addresses } = sendBatchValues(batch, nowMs);
    let sent = false;
    try {
      const firsts = await this.sendLane.use(async (client, markBroken) => {
        try {
          sent = true;
          return await new Promise<(number | null)[]>((resolve, reject) => {
            client.query(new SendCall(values, (err, ids) => (err ? reject(err) : resolve(ids ?? []))));
          });
        } catch (err) {
          // A statement still running after a client-side timeout: the connection is not reused.
          if (!failedOnServer(err)) markBroken(err as Error);
          throw err;
        }
      });
      const first = new Map<string, number>();
      addresses.forEach((address, i) => {
        const id = firsts[i];
        if (id !== null && id !== undefined) first.set(address, id);
      });
      return batch.map((m): AppendResult => {
        const id = first.get(m.mailbox);
        if (id === undefined) return { missingMailbox: true };
        first.set(m.mailbox, id + 1);
        return { id };
      });
    } catch (err) {
      if (sent && !failedOnServer(err)) throw outcomeUnknownError(err, context, this.where);
      throw postgresError(err, context, this.where);
    }
  }

  /** Locks the batch's live mailboxes and reserves their ids; by address, with each one's first id. */
  private async lockForAppend(
    c: pg.PoolClient,
    counts: ReadonlyMap<string, number>,
    nowMs: number,
  ): Promise<Map<string, { id: number; first: number }>> {
    const addresses = [...counts.keys()];
    const found = new Map<string, { id: number; first: number }>();
    if (addresses.length === 1) {
      // The usual batch: one mailbox, one row lock, one statement.
      const n = counts.get(addresses[0]) ?? 0;
      const { rows } = await c.query<{ id: number; first: number }>({
        name: "mq9-reserve-one",
        text: `UPDATE mailboxes SET next_id = next_id + $2
               WHERE address = $1 AND (expires_ms IS NULL OR expires_ms > $3) RETURNING id, next_id - $2 AS first`,
        values: [addresses[0], n, nowMs],
      });
      if (rows[0]) found.set(addresses[0], rows[0]);
      return found;
    }
    const { rows } = await c.query<{ id: number; address: string }>({
      name: "mq9-live-mailboxes",
      text: "SELECT id, address FROM mailboxes WHERE address = ANY($1::text[]) AND (expires_ms IS NULL OR expires_ms > $2)",
      values: [addresses, nowMs],
    });
    const byId = new Map<number, number>();
    for (const row of rows) byId.set(row.id, counts.get(row.address) ?? 0);
    const first = await reserveIds(c, byId);
    for (const row of rows) {
      const id = first.get(row.id);
      if (id !== undefined) found.set(row.address, { id: row.id, first: id });
    }
    return found;
  }

  private async insertDelayed(
    c: pg.PoolClient,
    rows: readonly (MessageInsert & { dueMs: number })[],
  ): Promise<void> {
    await c.query({
      name: "mq9-insert-delayed",
      text: `INSERT INTO delayed (mbox, due_ms, priority, msg_key, tags, header, payload, expires_ms)
             SELECT mbox, due_ms, priority, msg_key, tags::jsonb, header, payload, expires_ms
             FROM unnest($1::bigint[], $2::bigint[], $3::smallint[], $4::text[], $5::text[], $6::bytea[], $7::bytea[], $8::bigint[])
               AS t(mbox, due_ms, priority, msg_key, tags, header, payload, expires_ms)`,
      values: [
        rows.map((r) => r.mbox),
        rows.map((r) => r.dueMs),
        rows.map((r) => r.priority),
        rows.map((r) => r.key),
        rows.map((r) => r.tags),
        rows.map((r) => r.header),
        rows.map((r) => r.payload),
        rows.map((r) => r.expiresMs),
      ],
    });
  }

  /** One statement outside a transaction, its failure mapped to a StorageError. */
  private async run<R extends pg.QueryResultRow = pg.QueryResultRow>(
    context: string,
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    try {
      return await this.pool.query<R>(config);
    } catch (err) {
      throw postgresError(err, context, this.where);
    }
  }

  /**
   * A change in one statement that is its own transaction, run again on a deadlock. Sent and left
   * unanswered (a lost connection, a timeout), it may have committed: it fails with the outcome
   * unknown, not as a failure that changed nothing.
   */
  private async write<R extends pg.QueryResultRow = pg.QueryResultRow>(
    context: string,
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    for (let attempt = 1; ; attempt++) {
      let sent = false;
      try {
        return await withCheckedOutClient(this.pool, async (client, markBroken) => {
          sent = true;
          return client.query<R>(config).catch((err: Error) => {
            if (!failedOnServer(err)) markBroken(err);
            throw err;
          });
        });
      } catch (err) {
        if (sent && !failedOnServer(err)) throw outcomeUnknownError(err, context, this.where);
        if (sent && attempt < DEADLOCK_RETRIES && isRetryable(err)) continue;
        throw postgresError(err, context, this.where);
      }
    }
  }

  /** One statement that is its own transaction, run again on a deadlock or serialization failure. */
  private async call<R extends pg.QueryResultRow>(
    context: string,
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pool.query<R>(config);
      } catch (err) {
        if (attempt < DEADLOCK_RETRIES && isRetryable(err)) continue;
        throw postgresError(err, context, this.where);
      }
    }
  }

  /**
   * Runs `body` in one transaction (again, on a deadlock); answered only once COMMIT returned.
   * A COMMIT sent that got no answer (a lost connection, a server shutting down, a timeout) fails
   * with the outcome unknown, rather than as a failure that changed nothing.
   */
  private async transaction<T>(context: string, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient | undefined;
      let committing = false;
      try {
        return await withCheckedOutClient(this.pool, async (checkedOut, markBroken) => {
          client = checkedOut;
          try {
            await checkedOut.query("BEGIN");
            const result = await body(checkedOut);
            committing = true;
            await checkedOut.query("COMMIT");
            return result;
          } catch (err) {
            if (committing && !failedOnServer(err)) {
              // Whatever the COMMIT did, this connection is not given to the next caller.
              markBroken(err as Error);
              throw err;
            }
            // A connection that could not even roll back is not given to the next caller.
            await checkedOut.query("ROLLBACK").catch(markBroken);
            throw err;
          }
        });
      } catch (err) {
        if (committing && !failedOnServer(err)) {
          throw outcomeUnknownError(err, context, this.where);
        }
        // A failed check-out is not retried: only a transaction that ran can have deadlocked.
        if (client !== undefined && attempt < DEADLOCK_RETRIES && isRetryable(err)) continue;
        throw postgresError(err, context, this.where);
      }
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StorageError("the PostgreSQL store is closed", "STORE_CLOSED");
    const refusal = this.refusal();
    if (refusal !== undefined) throw new StorageError(refusal, "STORE_FORMAT");
  }
}
