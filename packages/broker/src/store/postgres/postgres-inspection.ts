import { PRIORITIES, priorityRank } from "@mq9/protocol";
import type pg from "pg";
import type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  OwnedMailboxes,
  PurgeFilter,
  StoreInspection,
  StoreTotals,
} from "../store-inspection.js";
import { ownersOf, purgesAll } from "../store-inspection.js";

type Query = <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<R[]>;
type Transaction = <T>(body: (c: pg.PoolClient) => Promise<T>) => Promise<T>;

const LIVE_BOX = "(b.expires_ms IS NULL OR b.expires_ms > $1)";
const LIVE_MESSAGE = "(m.expires_ms IS NULL OR m.expires_ms > $1)";

/**
 * The HTTP API's read and admin operations over the shared database: every node's dashboard
 * and /api show the whole cluster's mailboxes, depths and group lags.
 */
export class PostgresInspection implements StoreInspection {
  constructor(
    private readonly query: Query,
    private readonly transaction: Transaction,
  ) {}

  async mailboxStats(nowMs: number, options: MailboxStatsOptions): Promise<MailboxStats[]> {
    const match = options.exact ? "b.address = $2" : "strpos(b.address, $2) > 0";
    const rows = await this.query<{
      id: number;
      address: string;
      ttl_s: number;
      description: string;
      created_ms: number;
      expires_ms: number | null;
      owner: string | null;
      max_deliver: number | null;
      dead_letter: string | null;
      depth: number[] | null;
      bytes: string[] | null;
      oldest: number | null;
      newest: number | null;
      delayed: number;
      groups: number;
    }>(
      `SELECT b.*, s.depth, s.bytes, s.oldest, s.newest,
         (SELECT count(*)::int FROM delayed d WHERE d.mbox = b.id) AS delayed,
         (SELECT count(*)::int FROM groups g WHERE g.mbox = b.id) AS groups
       FROM mailboxes b,
       LATERAL (SELECT
           array[count(*) FILTER (WHERE priority = 0), count(*) FILTER (WHERE priority = 1),
                 count(*) FILTER (WHERE priority = 2)]::int[] AS depth,
           array[coalesce(sum(length(payload) + coalesce(length(header), 0)) FILTER (WHERE priority = 0), 0),
                 coalesce(sum(length(payload) + coalesce(length(header), 0)) FILTER (WHERE priority = 1), 0),
                 coalesce(sum(length(payload) + coalesce(length(header), 0)) FILTER (WHERE priority = 2), 0)
                ]::bigint[]::text[] AS bytes,
           min(created_ms) AS oldest, max(created_ms) AS newest
         FROM messages m WHERE m.mbox = b.id AND ${LIVE_MESSAGE}) s
       WHERE ${LIVE_BOX} AND ${match} ORDER BY b.address LIMIT $3`,
      [nowMs, options.search ?? "", options.limit],
    );
    return rows.map((row) => {
      const depth = { critical: 0, urgent: 0, normal: 0 };
      const bytesByPriority = { critical: 0, urgent: 0, normal: 0 };
      PRIORITIES.forEach((priority, rank) => {
        depth[priority] = row.depth?.[rank] ?? 0;
        bytesByPriority[priority] = Number(row.bytes?.[rank] ?? 0);
      });
      return {
        address: row.address,
        ttlSeconds: row.ttl_s,
        desc: row.description,
        createdMs: row.created_ms,
        expiresMs: row.expires_ms ?? undefined,
        owner: row.owner ?? undefined,
        maxDeliver: row.max_deliver ?? undefined,
        deadLetter: row.dead_letter ?? undefined,
        depth,
        bytes: bytesByPriority.critical + bytesByPriority.urgent + bytesByPriority.normal,
        bytesByPriority,
        oldestMs: row.oldest ?? undefined,
        newestMs: row.newest ?? undefined,
        delayed: row.delayed,
        groups: row.groups,
      };
    });
  }

  async mailboxOwners(nowMs: number, examples: number): Promise<OwnedMailboxes[]> {
    const rows = await this.query<{ owner: string; address: string; n: number }>(
      `SELECT owner, address, n FROM (
         SELECT b.owner, b.address, count(*) OVER (PARTITION BY b.owner)::int AS n,
                row_number() OVER (PARTITION BY b.owner ORDER BY b.address) AS r
         FROM mailboxes b WHERE b.owner IS NOT NULL AND ${LIVE_BOX}) o
       WHERE r <= $2 ORDER BY owner, address`,
      [nowMs, examples],
    );
    return ownersOf(rows);
  }

  async totals(nowMs: number): Promise<StoreTotals> {
    const [row] = await this.query<{ mailboxes: number; messages: number; bytes: number | null }>(
      `SELECT (SELECT count(*)::int FROM mailboxes b WHERE ${LIVE_BOX}) AS mailboxes,
              count(*)::int AS messages, sum(length(payload) + coalesce(length(header), 0))::bigint AS bytes
       FROM messages m WHERE ${LIVE_MESSAGE}`,
      [nowMs],
    );
    return { mailboxes: row?.mailboxes ?? 0, messages: row?.messages ?? 0, bytes: row?.bytes ?? 0 };
  }

  async groupStats(address: string, nowMs: number): Promise<GroupStats[] | undefined> {
    const boxes = await this.query<{ id: number }>(
      `SELECT id FROM mailboxes b WHERE b.address = $2 AND ${LIVE_BOX}`,
      [nowMs, address],
    );
    if (boxes.length === 0) return undefined;
    // Lag: live messages the group has not been handed yet, and those it holds a lease row of
    // (an ACK deletes its rows; see migration 6 in postgres-schema.ts).
    const rows = await this.query<{
      name: string;
      cursor0: number;
      cursor1: number;
      cursor2: number;
      lag: number;
      oldest: number | null;
      leased: number;
    }>(
      // A class's position: its lowest id leased and not ACKed, else the one after the highest
      // handed out (the stored cursors trail behind: ACKs delete rows and move no cursor).
      `SELECT g.name,
         least(g.delivered0 + 1, (SELECT min(d.msg_id) FROM deliveries d
           WHERE d.mbox = g.mbox AND d.grp = g.name AND d.priority = 0 AND NOT d.acked)) AS cursor0,
         least(g.delivered1 + 1, (SELECT min(d.msg_id) FROM deliveries d
           WHERE d.mbox = g.mbox AND d.grp = g.name AND d.priority = 1 AND NOT d.acked)) AS cursor1,
         least(g.delivered2 + 1, (SELECT min(d.msg_id) FROM deliveries d
           WHERE d.mbox = g.mbox AND d.grp = g.name AND d.priority = 2 AND NOT d.acked)) AS cursor2,
         u.lag, u.oldest,
         (SELECT count(*)::int FROM deliveries d
           WHERE d.mbox = g.mbox AND d.grp = g.name AND NOT d.acked AND d.lease_until_ms > $1) AS leased
       FROM groups g,
       LATERAL (SELECT count(*)::int AS lag, min(m.created_ms) AS oldest FROM messages m
           WHERE m.mbox = g.mbox AND ${LIVE_MESSAGE}
             AND (m.msg_id > (CASE m.priority WHEN 0 THEN g.delivered0 WHEN 1 THEN g.delivered1 ELSE g.delivered2 END)
                  OR EXISTS (SELECT 1 FROM deliveries d
                             WHERE d.mbox = g.mbox AND d.msg_id = m.msg_id AND d.grp = g.name AND NOT d.acked))) u
       WHERE g.mbox = $2 ORDER BY g.name`,
      [nowMs, boxes[0].id],
    );
    return rows.map((row) => ({
      name: row.name,
      cursors: [Number(row.cursor0), Number(row.cursor1), Number(row.cursor2)],
      lag: row.lag,
      leased: row.leased,
      oldestUnackedMs: row.oldest ?? undefined,
    }));
  }

  async deleteMailbox(address: string, nowMs: number): Promise<boolean> {
    // The rows cascade; the id counter goes with the mailbox, as after its expiry.
    const rows = await this.query(
      `DELETE FROM mailboxes b WHERE b.address = $2 AND ${LIVE_BOX} RETURNING id`,
      [nowMs, address],
    );
    return rows.length > 0;
  }

  async purgeMailbox(address: string, nowMs: number, filter?: PurgeFilter): Promise<number | undefined> {
    return this.transaction(async (c) => {
      const box = await c.query<{ id: number }>(
        `SELECT id FROM mailboxes b WHERE b.address = $2 AND ${LIVE_BOX} FOR UPDATE`,
        [nowMs, address],
      );
      const id = box.rows[0]?.id;
      if (id === undefined) return undefined;
      if (!purgesAll(filter)) return this.purgeMatching(c, id, filter as PurgeFilter);
      const gone = await c.query("DELETE FROM messages WHERE mbox = $1", [id]);
      await c.query("DELETE FROM delayed WHERE mbox = $1", [id]);
      await c.query("DELETE FROM deliveries WHERE mbox = $1", [id]);
      return gone.rowCount ?? 0;
    });
  }

  async resetGroup(address: string, group: string, fromId: number, nowMs: number): Promise<boolean> {
    const found = await this.query(
      `SELECT 1 FROM groups g JOIN mailboxes b ON b.id = g.mbox
       WHERE b.address = $2 AND ${LIVE_BOX} AND g.name = $3`,
      [nowMs, address, group],
    );
    if (found.length === 0) return false;
    // A reset claim of nothing: the group's row starts over and its deliveries (leases) go.
    await this.query("SELECT count(*) FROM mq9_claim($1, $2, $3, $4, true, 0, 0, $4, NULL, NULL, NULL)", [
      address,
      group,
      fromId,
      nowMs,
    ]);
    return true;
  }

  /** Deletes the stored messages of a mailbox that match `filter`, with their deliveries. */
  private async purgeMatching(c: pg.PoolClient, mbox: number, filter: PurgeFilter): Promise<number> {
    const values: unknown[] = [mbox];
    let where = "";
    const add = (condition: (n: string) => string, value: unknown) => {
      values.push(value);
      where += ` AND ${condition(`$${values.length}`)}`;
    };
    if (filter.priority !== undefined) add((n) => `m.priority = ${n}`, priorityRank[filter.priority]);
    if (filter.key !== undefined) add((n) => `m.msg_key = ${n}`, filter.key);
    if (filter.tag !== undefined) add((n) => `m.tags ? ${n}`, filter.tag);
    if (filter.createdUpToMs !== undefined) add((n) => `m.created_ms <= ${n}`, filter.createdUpToMs);
    const { rows } = await c.query<{ n: number }>(
      `WITH gone AS (DELETE FROM messages m WHERE m.mbox = $1${where} RETURNING m.msg_id),
            leases AS (DELETE FROM deliveries d USING gone WHERE d.mbox = $1 AND d.msg_id = gone.msg_id)
       SELECT count(*)::int AS n FROM gone`,
      values,
    );
    return rows[0]?.n ?? 0;
  }
}
