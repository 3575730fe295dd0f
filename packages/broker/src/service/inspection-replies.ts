import { type GroupSummary, type MailboxSummary, PRIORITIES, type Priority } from "@mq9/protocol";
import type { GroupStats, MailboxStats } from "../store/store-inspection.js";

function byPriority(values: readonly number[]): Record<Priority, number> {
  return { critical: values[0], urgent: values[1], normal: values[2] };
}

/** A mailbox as MAILBOX.LIST and MAILBOX.INFO answer it, and the REST API returns it. */
export function mailboxSummary(stats: MailboxStats): MailboxSummary {
  const { depth } = stats;
  return {
    mail_address: stats.address,
    desc: stats.desc,
    ttl: stats.ttlSeconds,
    created_at: stats.createdMs,
    expires_at: stats.expiresMs ?? null,
    depth,
    messages: depth.critical + depth.urgent + depth.normal,
    bytes: stats.bytes,
    bytes_by_priority: byPriority(PRIORITIES.map((p) => stats.bytesByPriority[p])),
    oldest_at: stats.oldestMs ?? null,
    newest_at: stats.newestMs ?? null,
    delayed: stats.delayed,
    groups: stats.groups,
  };
}

/** A consumer group as GROUP.LIST, GROUP.INFO and MAILBOX.INFO answer it. */
export function groupSummary(stats: GroupStats, nowMs: number): GroupSummary {
  const oldest = stats.oldestUnackedMs;
  return {
    name: stats.name,
    position: byPriority(stats.cursors),
    pending: Math.max(0, stats.lag - stats.leased),
    leased: stats.leased,
    lag: stats.lag,
    lag_seconds: oldest === undefined ? 0 : Math.max(0, Math.floor((nowMs - oldest) / 1000)),
    oldest_unacked_at: oldest ?? null,
    // `members` and `leases` (member, delivery count, expiry per lease) go here once FETCH
    // names its members.
  };
}
