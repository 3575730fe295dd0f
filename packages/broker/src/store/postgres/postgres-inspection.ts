import { PRIORITIES } from "@mq9/protocol";
import type pg from "pg";
import type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  OwnedMailboxes,
  StoreInspection,
  StoreTotals,
} from "../store-inspection.js";
import { ownersOf } from "../store-inspection.js";

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
      depth: number[] | null;
      bytes: number | null;
      oldest: number | null;
      delayed: number;
      groups: number;
    }>(
      `SELECT b.*,
         (SELECT array[count(*) FILTER (WHERE priority = 0), count(*) FILTER (WHERE priority = 1),
                       count(*) FILTER (WHERE priority = 2)]::int[]
            FROM messages m WHERE m.mbox = b.id AND ${LIVE_MESSAGE}) AS depth,
         (SELECT sum(length(payload) + coalesce(length(header), 0))::bigint FROM messages m
            WHERE m.mbox = b.id AND ${LIVE_MESSAGE}) AS bytes,
         (SELECT min(created_ms) FROM messages m WHERE m.mbox = b.id AND ${LIVE_MESSAGE}) AS oldest,
         (SELECT count(*)::int FROM delayed d WHERE d.mbox = b.id) AS delayed,
         (SELECT count(*)::int FROM groups g WHERE g.mbox = b.id) AS groups
       FROM mailboxes b WHERE ${LIVE_BOX} AND ${match} ORDER BY b.address LIMIT $3`,
      [nowMs, options.search ?? "", options.limit],
    );
    return rows.map((row) => {
      const depth = { critical: 0, urgent: 0, normal: 0 };
      (row.depth ?? [0, 0, 0]).forEach((n, rank) => {
        depth[PRIORITIES[rank]] = n;
      });
      return {
        address: row.address,
        ttlSeconds: row.ttl_s,
        desc: row.description,
        createdMs: row.created_ms,
        expiresMs: row.expires_ms ?? undefined,
        depth,
        bytes: row.bytes ?? 0,
        oldestMs: row.oldest ?? undefined,
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
    return this.query<GroupStats>(
      `SELECT g.name,
         (SELECT count(*)::int FROM messages m
           WHERE m.mbox = g.mbox AND ${LIVE_MESSAGE}
             AND (m.msg_id > (CASE m.priority WHEN 0 THEN g.delivered0 WHEN 1 THEN g.delivered1 ELSE g.delivered2 END)
                  OR EXISTS (SELECT 1 FROM deliveries d
                             WHERE d.mbox = g.mbox AND d.msg_id = m.msg_id AND d.grp = g.name AND NOT d.acked))) AS lag,
         (SELECT count(*)::int FROM deliveries d
           WHERE d.mbox = g.mbox AND d.grp = g.name AND NOT d.acked AND d.lease_until_ms > $1) AS leased
       FROM groups g WHERE g.mbox = $2 ORDER BY g.name`,
      [nowMs, boxes[0].id],
    );
  }

  async deleteMailbox(address: string, nowMs: number): Promise<boolean> {
    // The rows cascade; the id counter goes with the mailbox, as after its expiry.
    const rows = await this.query(
      `DELETE FROM mailboxes b WHERE b.address = $2 AND ${LIVE_BOX} RETURNING id`,
      [nowMs, address],
    );
    return rows.length > 0;
  }

  async purgeMailbox(address: string, nowMs: number): Promise<number | undefined> {
    return this.transaction(async (c) => {
      const box = await c.query<{ id: number }>(
        `SELECT id FROM mailboxes b WHERE b.address = $2 AND ${LIVE_BOX} FOR UPDATE`,
        [nowMs, address],
      );
      const id = box.rows[0]?.id;
      if (id === undefined) return undefined;
      const gone = await c.query("DELETE FROM messages WHERE mbox = $1", [id]);
      await c.query("DELETE FROM delayed WHERE mbox = $1", [id]);
      await c.query("DELETE FROM deliveries WHERE mbox = $1", [id]);
      return gone.rowCount ?? 0;
    });
  }
}
