import { PRIORITIES } from "@mq9/protocol";
import type Database from "better-sqlite3";
import type { GroupClaims } from "./group-claims.js";
import { RANKS } from "./message-reads.js";
import type { MailboxRow, StatsStatements } from "./sqlite-statements.js";
import type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  OwnedMailboxes,
  StoreTotals,
} from "./store-inspection.js";
import { ownersOf } from "./store-inspection.js";

/**
 * The counts the dashboard and the REST API show of the embedded store (the read half of
 * StoreInspection): mailboxes with their depths, totals, consumer groups with their lag.
 * Call in a turn of the store.
 */
export class SqliteStats {
  constructor(
    private readonly db: Database.Database,
    private readonly stmt: StatsStatements,
    private readonly claims: GroupClaims,
  ) {}

  mailboxOwners(nowMs: number, examples: number): OwnedMailboxes[] {
    const rows = this.db
      .prepare<[number, number], { owner: string; address: string; n: number }>(
        `SELECT owner, address, n FROM (
           SELECT owner, address, count(*) OVER (PARTITION BY owner) AS n,
                  row_number() OVER (PARTITION BY owner ORDER BY address) AS r
           FROM mailboxes WHERE owner IS NOT NULL AND (expires_ms IS NULL OR expires_ms > ?))
         WHERE r <= ? ORDER BY owner, address`,
      )
      .all(nowMs, examples);
    return ownersOf(rows);
  }

  mailboxStats(nowMs: number, options: MailboxStatsOptions): MailboxStats[] {
    const match = options.exact ? "address = ?" : "instr(address, ?) > 0";
    const boxes = this.db
      .prepare<[number, string, number], MailboxRow>(
        `SELECT * FROM mailboxes WHERE (expires_ms IS NULL OR expires_ms > ?) AND ${match} ORDER BY address LIMIT ?`,
      )
      .all(nowMs, options.search ?? "", options.limit);
    if (boxes.length === 0) return [];
    const ids = JSON.stringify(boxes.map((box) => box.id));
    const inBoxes = "mbox IN (SELECT value FROM json_each(?))";
    const classes = this.db
      .prepare<
        [string, number],
        { mbox: number; priority: number; n: number; bytes: number; oldest: number; newest: number }
      >(
        `SELECT mbox, priority, count(*) AS n, min(created_ms) AS oldest, max(created_ms) AS newest,
           sum(coalesce(seg_len, length(payload) + coalesce(length(header), 0))) AS bytes
         FROM messages WHERE ${inBoxes} AND (expires_ms IS NULL OR expires_ms > ?) GROUP BY mbox, priority`,
      )
      .all(ids, nowMs);
    const countsOf = (table: string) =>
      new Map(
        this.db
          .prepare<[string], { mbox: number; n: number }>(
            `SELECT mbox, count(*) AS n FROM ${table} WHERE ${inBoxes} GROUP BY mbox`,
          )
          .all(ids)
          .map((row) => [row.mbox, row.n]),
      );
    const delayed = countsOf("delayed");
    const groups = countsOf("groups");
    return boxes.map((box): MailboxStats => {
      const depth = { critical: 0, urgent: 0, normal: 0 };
      const bytesByPriority = { critical: 0, urgent: 0, normal: 0 };
      let bytes = 0;
      let oldestMs: number | undefined;
      let newestMs: number | undefined;
      for (const row of classes) {
        if (row.mbox !== box.id) continue;
        depth[PRIORITIES[row.priority]] = row.n;
        bytesByPriority[PRIORITIES[row.priority]] = row.bytes;
        bytes += row.bytes;
        oldestMs = oldestMs === undefined ? row.oldest : Math.min(oldestMs, row.oldest);
        newestMs = newestMs === undefined ? row.newest : Math.max(newestMs, row.newest);
      }
      return {
        address: box.address,
        ttlSeconds: box.ttl_s,
        desc: box.description,
        createdMs: box.created_ms,
        expiresMs: box.expires_ms ?? undefined,
        owner: box.owner ?? undefined,
        maxDeliver: box.max_deliver ?? undefined,
        deadLetter: box.dead_letter ?? undefined,
        depth,
        bytes,
        bytesByPriority,
        oldestMs,
        newestMs,
        delayed: delayed.get(box.id) ?? 0,
        groups: groups.get(box.id) ?? 0,
      };
    });
  }

  totals(nowMs: number): StoreTotals {
    const mailboxes = this.stmt.liveMailboxes.get(nowMs);
    const messages = this.stmt.liveMessages.get(nowMs);
    return { mailboxes: mailboxes?.n ?? 0, messages: messages?.n ?? 0, bytes: messages?.bytes ?? 0 };
  }

  /** The groups of the mailbox `mbox`. */
  groupStats(mbox: number, nowMs: number): GroupStats[] {
    return this.stmt.groupsOf.all(mbox).map((row) => {
      const cursors = [row.cursor0, row.cursor1, row.cursor2];
      let lag = 0;
      let oldestUnackedMs: number | undefined;
      for (const rank of RANKS) {
        const unacked = this.stmt.unackedCount.get(mbox, rank, cursors[rank], nowMs, mbox, row.name);
        lag += unacked?.n ?? 0;
        const oldest = unacked?.oldest ?? undefined;
        if (oldest !== undefined) oldestUnackedMs = Math.min(oldestUnackedMs ?? oldest, oldest);
      }
      const leased = this.claims.leased(mbox, row.name, nowMs);
      return { name: row.name, cursors, lag, leased, oldestUnackedMs };
    });
  }
}
