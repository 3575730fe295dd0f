import type { GroupSummary, MailboxSummary, ServerInfoReply } from "@mq9/client";
import { printTable } from "../../shared/output.js";

/** Unix milliseconds as an ISO timestamp without milliseconds (UTC); "-" for none. */
export function timeCell(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Bytes for a person: 512 B, 1.5 KiB, 3.2 MiB, … */
export function bytesCell(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Lines of `label  value`, the labels aligned. */
export function printFields(fields: [string, string][]): void {
  const width = Math.max(...fields.map(([label]) => label.length));
  process.stdout.write(`${fields.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join("\n")}\n`);
}

export function printMailboxTable(mailboxes: MailboxSummary[]): void {
  if (mailboxes.length === 0) {
    process.stdout.write("(no mailboxes)\n");
    return;
  }
  printTable(
    ["MAILBOX", "MESSAGES", "CRITICAL", "URGENT", "NORMAL", "BYTES", "DELAYED", "GROUPS", "OLDEST", "TTL"],
    mailboxes.map((m) => [
      m.mail_address,
      String(m.messages),
      String(m.depth.critical),
      String(m.depth.urgent),
      String(m.depth.normal),
      bytesCell(m.bytes),
      String(m.delayed),
      String(m.groups),
      timeCell(m.oldest_at),
      m.ttl === 0 ? "never" : `${m.ttl}s`,
    ]),
  );
}

export function printGroupTable(groups: GroupSummary[]): void {
  if (groups.length === 0) {
    process.stdout.write("(no groups)\n");
    return;
  }
  printTable(
    ["GROUP", "PENDING", "LEASED", "LAG", "LAG_S", "REDELIVERED", "DEAD", "MEMBERS", "POSITION (C/U/N)"],
    groups.map((g) => [
      g.name,
      String(g.pending),
      String(g.leased),
      String(g.lag),
      String(g.lag_seconds),
      String(g.redelivered ?? 0),
      String(g.dead_lettered ?? 0),
      String(g.members?.length ?? 0),
      `${g.position.critical}/${g.position.urgent}/${g.position.normal}`,
    ]),
  );
}

export function printMailboxFields(m: MailboxSummary): void {
  const perPriority = (values: Record<string, number>, show: (n: number) => string) =>
    `critical ${show(values.critical)}, urgent ${show(values.urgent)}, normal ${show(values.normal)}`;
  printFields([
    ["mailbox", m.mail_address],
    ["desc", m.desc || "-"],
    ["ttl", m.ttl === 0 ? "never expires" : `${m.ttl}s (expires ${timeCell(m.expires_at)})`],
    ["created", timeCell(m.created_at)],
    ["messages", `${m.messages} (${perPriority(m.depth, String)})`],
    ["bytes", `${bytesCell(m.bytes)} (${perPriority(m.bytes_by_priority, bytesCell)})`],
    ["oldest", timeCell(m.oldest_at)],
    ["newest", timeCell(m.newest_at)],
    ["delayed", String(m.delayed)],
    ["groups", String(m.groups)],
    ["max deliver", m.max_deliver ? String(m.max_deliver) : "no limit"],
    ["dead letters", m.dead_letter ?? "-"],
  ]);
}

export function printGroupFields(g: GroupSummary): void {
  printFields([
    ["group", g.name],
    ["position", `critical ${g.position.critical}, urgent ${g.position.urgent}, normal ${g.position.normal}`],
    ["pending", String(g.pending)],
    ["leased", String(g.leased)],
    ["lag", `${g.lag} messages, ${g.lag_seconds}s`],
    ["oldest un-ACKed", timeCell(g.oldest_unacked_at)],
    ["redelivered", String(g.redelivered ?? 0)],
    ["dead-lettered", String(g.dead_lettered ?? 0)],
    ["max deliver", g.max_deliver ? String(g.max_deliver) : "no limit"],
    ["backoff", g.backoff_ms?.length ? g.backoff_ms.map((ms) => `${ms}ms`).join(", ") : "none"],
    [
      "members",
      g.members?.length ? g.members.map((m) => `${m.member || "(unnamed)"} ${m.leased}`).join(", ") : "-",
    ],
  ]);
  if (!g.leases || g.leases.length === 0) return;
  process.stdout.write("\n");
  printTable(
    ["MSG_ID", "STATE", "MEMBER", "DELIVERIES", "UNTIL", "RETRY_AT", "REASON"],
    g.leases.map((l) => [
      String(l.msg_id),
      l.state,
      l.member ?? "-",
      String(l.delivery_count),
      timeCell(l.lease_until),
      timeCell(l.retry_at),
      l.reason ?? "-",
    ]),
  );
}

export function printServerFields(info: Omit<ServerInfoReply, "error" | "code">): void {
  const fields: [string, string][] = [
    ["version", info.version],
    ["uptime", `${info.uptime_s}s (since ${timeCell(info.started_at)})`],
    ["store", info.store],
    ["connections", String(info.connections)],
    ["subscriptions", info.subscriptions === null ? "- (held by nats-server)" : String(info.subscriptions)],
    [
      "memory",
      `rss ${bytesCell(info.memory.rss)}, heap ${bytesCell(info.memory.heap_used)} of ${bytesCell(info.memory.heap_total)}`,
    ],
    [
      "disk",
      info.disk === null
        ? "-"
        : `${info.disk.data_dir}: ${bytesCell(info.disk.used_bytes)} used, ${bytesCell(info.disk.free_bytes)} free`,
    ],
  ];
  if (info.cluster === null) fields.push(["cluster", "- (a broker of its own)"]);
  else {
    fields.push(["cluster", `${info.cluster.cluster}, this node ${info.cluster.node}`]);
    for (const peer of info.cluster.peers) {
      fields.push(["  node", `${peer.node} ${peer.state}${peer.self ? " (this one)" : ""}`]);
    }
  }
  printFields(fields);
}
