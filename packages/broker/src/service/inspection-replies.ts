import {
  type GroupSummary,
  type LeaseSummary,
  type MailboxSummary,
  PRIORITIES,
  type Priority,
} from "@mq9/protocol";
import type { GroupLeaseReport, LeaseInfo } from "../store/lease-inspection.js";
import { deadLetterAddressOf } from "../store/store.js";
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
    max_deliver: stats.maxDeliver || null,
    dead_letter: deadLetterAddressOf(stats),
  };
}

function leaseSummary(lease: LeaseInfo): LeaseSummary {
  return {
    msg_id: lease.msgId,
    member: lease.member ?? null,
    delivery_count: lease.deliveryCount,
    state: lease.state,
    lease_until: lease.leaseUntilMs,
    retry_at: lease.retryAtMs ?? null,
    reason: lease.reason ?? null,
  };
}

/** Per member, how many messages it holds leased now (unnamed members under ""), most first. */
function membersOf(leases: readonly LeaseInfo[]): { member: string; leased: number }[] {
  const counts = new Map<string, number>();
  for (const lease of leases) {
    if (lease.state !== "leased") continue;
    const member = lease.member ?? "";
    counts.set(member, (counts.get(member) ?? 0) + 1);
  }
  return [...counts].map(([member, leased]) => ({ member, leased })).sort((a, b) => b.leased - a.leased);
}

/**
 * A consumer group as GROUP.LIST, GROUP.INFO and MAILBOX.INFO answer it; with `withLeases`, each
 * lease too (GROUP.INFO).
 */
export function groupSummary(
  stats: GroupStats,
  nowMs: number,
  report?: GroupLeaseReport,
  withLeases = false,
): GroupSummary {
  const oldest = stats.oldestUnackedMs;
  const summary: GroupSummary = {
    name: stats.name,
    position: byPriority(stats.cursors),
    pending: Math.max(0, stats.lag - stats.leased),
    leased: stats.leased,
    lag: stats.lag,
    lag_seconds: oldest === undefined ? 0 : Math.max(0, Math.floor((nowMs - oldest) / 1000)),
    oldest_unacked_at: oldest ?? null,
    redelivered: report?.redelivered ?? 0,
    dead_lettered: report?.deadLettered ?? 0,
    max_deliver: report?.policy.maxDeliver || null,
    backoff_ms: [...(report?.policy.backoffMs ?? [])],
    members: membersOf(report?.leases ?? []),
  };
  if (withLeases) summary.leases = (report?.leases ?? []).map(leaseSummary);
  return summary;
}
