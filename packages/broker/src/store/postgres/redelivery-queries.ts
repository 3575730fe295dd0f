import type pg from "pg";
import { deadLetterOf } from "../dead-letter-rows.js";
import type { HeldLease } from "../lease-inspection.js";
import type { DeadLetter, DeliveryPolicy, NakOptions, NakResult } from "../store.js";
import { type MessageRow, storedMessage } from "./message-rows.js";

/**
 * The PostgreSQL store's NAK, dead-letter sweep and settle, as queries (see the delivery-limits
 * migration in postgres-schema.ts for what the columns mean).
 */

/** A lease row given back: out of its claim's batch, let go at once, delivered again at its retry time. */
export function nakQuery(mailbox: string, group: string, msgId: number, options: NakOptions): pg.QueryConfig {
  return {
    name: "mq9-nak",
    text: `UPDATE deliveries d SET batch = -1, lease_until_ms = least(d.lease_until_ms, $4),
             retry_at_ms = $4 + coalesce($5, mq9_backoff(g.backoff_ms, d.delivery_count)),
             reason = coalesce($6, d.reason), dead = d.dead OR $7
           FROM mailboxes b, groups g
           WHERE b.address = $1 AND (b.expires_ms IS NULL OR b.expires_ms > $4) AND g.mbox = b.id AND g.name = $2
             AND d.mbox = b.id AND d.grp = $2 AND d.msg_id = $3 AND NOT d.acked
           RETURNING d.dead, d.delivery_count, coalesce(g.max_deliver, b.max_deliver, 0) AS max_deliver`,
    values: [
      mailbox,
      group,
      msgId,
      options.nowMs,
      options.delayMs ?? null,
      options.reason ?? null,
      options.terminal === true,
    ],
  };
}

export function nakResult(
  rows: readonly { dead: boolean; delivery_count: number; max_deliver: number }[],
): NakResult {
  const row = rows[0];
  if (!row) return { found: false, deadLetter: false };
  return {
    found: true,
    deadLetter: row.dead || (row.max_deliver > 0 && row.delivery_count >= row.max_deliver),
  };
}

/** Lease rows NAKed terminally, or whose last allowed lease ran out, with their messages. */
export function deadLettersQuery(nowMs: number, limit: number): pg.QueryConfig {
  return {
    name: "mq9-dead-letters",
    text: `SELECT b.address, b.owner, b.dead_letter, d.grp, d.delivery_count, d.reason,
                  m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
           FROM deliveries d
           JOIN groups g ON g.mbox = d.mbox AND g.name = d.grp
           JOIN mailboxes b ON b.id = d.mbox
           JOIN messages m ON m.mbox = d.mbox AND m.msg_id = d.msg_id
           WHERE NOT d.acked AND (b.expires_ms IS NULL OR b.expires_ms > $1) AND (m.expires_ms IS NULL OR m.expires_ms > $1)
             AND (d.dead OR (d.lease_until_ms <= $1 AND coalesce(g.max_deliver, b.max_deliver, 0) > 0
                             AND d.delivery_count >= coalesce(g.max_deliver, b.max_deliver)))
           ORDER BY d.mbox, d.grp, d.msg_id LIMIT $2`,
    values: [nowMs, limit],
  };
}

export interface DeadLetterRow extends MessageRow {
  address: string;
  owner: string | null;
  dead_letter: string | null;
  grp: string;
  delivery_count: number;
  reason: string | null;
}

export function deadLetterOfRow(row: DeadLetterRow): DeadLetter {
  return deadLetterOf({
    mailbox: row.address,
    group: row.grp,
    message: storedMessage(row),
    deliveryCount: row.delivery_count,
    reason: row.reason,
    deadLetter: row.dead_letter,
    owner: row.owner,
  });
}

/**
 * Ends a group's hold on dead letters stored elsewhere: their lease rows go (which is an ACK), and
 * the group counts them. Only rows whose lease has run out: a sweep repeated later finds none.
 */
export function settleQuery(
  mailbox: string,
  group: string,
  msgIds: readonly number[],
  nowMs: number,
): pg.QueryConfig {
  return {
    name: "mq9-settle-dead-letters",
    text: `WITH gone AS (
             DELETE FROM deliveries d USING mailboxes b
             WHERE b.address = $1 AND d.mbox = b.id AND d.grp = $2 AND d.msg_id = ANY($3::bigint[])
               AND NOT d.acked AND d.lease_until_ms <= $4
             RETURNING d.mbox)
           UPDATE groups g SET dead_lettered = g.dead_lettered + x.n
           FROM (SELECT mbox, count(*) AS n FROM gone GROUP BY mbox) x
           WHERE g.mbox = x.mbox AND g.name = $2`,
    values: [mailbox, group, msgIds, nowMs],
  };
}

/** A group's delivery policy and dead-letter count (undefined row: no such live mailbox or group). */
export function groupPolicyQuery(mailbox: string, group: string, nowMs: number): pg.QueryConfig {
  return {
    name: "mq9-group-policy",
    text: `SELECT g.mbox, coalesce(g.max_deliver, b.max_deliver) AS max_deliver, g.backoff_ms, g.dead_lettered
           FROM groups g JOIN mailboxes b ON b.id = g.mbox
           WHERE b.address = $1 AND (b.expires_ms IS NULL OR b.expires_ms > $3) AND g.name = $2`,
    values: [mailbox, group, nowMs],
  };
}

export interface GroupPolicyRow {
  mbox: number;
  max_deliver: number | null;
  backoff_ms: number[] | null;
  dead_lettered: number;
}

export function policyOfRow(row: GroupPolicyRow): DeliveryPolicy {
  const policy: DeliveryPolicy = {};
  if (row.max_deliver !== null) policy.maxDeliver = row.max_deliver;
  if (row.backoff_ms !== null) policy.backoffMs = row.backoff_ms.map(Number);
  return policy;
}

/** The group's lease rows, by msg_id, at most `limit`, and how many were delivered more than once. */
export function groupLeaseRowsQuery(mbox: number, group: string, limit: number): pg.QueryConfig {
  return {
    name: "mq9-group-leases",
    text: `SELECT d.msg_id, d.member, d.delivery_count, d.lease_until_ms, d.retry_at_ms, d.reason, d.dead,
                  count(*) FILTER (WHERE d.delivery_count > 1) OVER () AS redelivered
           FROM deliveries d WHERE d.mbox = $1 AND d.grp = $2 AND NOT d.acked
           ORDER BY d.msg_id LIMIT $3`,
    values: [mbox, group, limit],
  };
}

export interface LeaseRow {
  msg_id: number;
  member: string | null;
  delivery_count: number;
  lease_until_ms: number;
  retry_at_ms: number | null;
  reason: string | null;
  dead: boolean;
  redelivered: number;
}

export function heldLeaseOf(row: LeaseRow): HeldLease {
  const lease: HeldLease = { msgId: row.msg_id, count: row.delivery_count, untilMs: row.lease_until_ms };
  if (row.member !== null) lease.member = row.member;
  if (row.retry_at_ms !== null) lease.retryAtMs = row.retry_at_ms;
  if (row.reason !== null) lease.reason = row.reason;
  if (row.dead) lease.dead = true;
  return lease;
}

/** Ends the running leases of a member (all members when $3 is null) now, without a backoff. */
export function releaseMemberQuery(
  mailbox: string,
  group: string,
  member: string | undefined,
  nowMs: number,
): pg.QueryConfig {
  return {
    name: "mq9-release-member",
    text: `UPDATE deliveries d SET lease_until_ms = $4, retry_at_ms = $4 FROM mailboxes b
           WHERE b.address = $1 AND d.mbox = b.id AND d.grp = $2 AND NOT d.acked AND d.lease_until_ms > $4
             AND ($3::text IS NULL OR d.member = $3)`,
    values: [mailbox, group, member ?? null, nowMs],
  };
}
