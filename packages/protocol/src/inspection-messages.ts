import type { Mq9Reply } from "./messages.js";
import type { Priority } from "./priority.js";

// The mq9 extensions for operators (`$mq9.AI.MAILBOX.LIST`, `…INFO`, `…PURGE`, `…DELETE`,
// `$mq9.AI.GROUP.*`, `$mq9.AI.SERVER.INFO`): their request and reply bodies. Times are Unix
// milliseconds, as in the REST API that returns the same shapes.

/** `$mq9.AI.MAILBOX.LIST`: live mailboxes whose address contains `search`, by address. */
export interface MailboxListRequest {
  search?: string;
  /** At most this many (default 200, at most 1000). */
  limit?: number;
}

/** A mailbox and what it holds, as LIST, INFO and the REST API show it. */
export interface MailboxSummary {
  mail_address: string;
  desc: string;
  /** Seconds; 0: never expires. */
  ttl: number;
  created_at: number;
  expires_at: number | null;
  /** Stored (live) messages per priority class. */
  depth: Record<Priority, number>;
  messages: number;
  /** Bytes the stored messages take (header and payload). */
  bytes: number;
  bytes_by_priority: Record<Priority, number>;
  oldest_at: number | null;
  newest_at: number | null;
  /** Delayed messages not due yet (not counted in `messages`). */
  delayed: number;
  groups: number;
}

export interface MailboxListReply extends Mq9Reply {
  mailboxes: MailboxSummary[];
}

/** A consumer group of a mailbox: where it stands and what it still has to take. */
export interface GroupSummary {
  name: string;
  /** Per priority class, the lowest msg_id the group has not ACKed yet (its cursor). */
  position: Record<Priority, number>;
  /** Live messages waiting to be delivered (again, once a lease ran out) to the group. */
  pending: number;
  /** Messages delivered to a member whose lease still runs. */
  leased: number;
  /** Live messages the group has not ACKed: pending + leased. */
  lag: number;
  /** Age of the oldest live message the group has not ACKed; 0 when there is none. */
  lag_seconds: number;
  oldest_unacked_at: number | null;
  // Reserved: `members` and `leases` (per lease: member, delivery count, expiry) come with
  // named consumer members; clients must ignore fields they do not know.
}

/** `$mq9.AI.MAILBOX.INFO.<mail_address>`. */
export interface MailboxInfoReply extends Mq9Reply {
  mailbox: MailboxSummary;
  groups: GroupSummary[];
}

/** `$mq9.AI.MAILBOX.PURGE.<mail_address>`: every filter given must hold; none purges everything. */
export interface MailboxPurgeRequest {
  key?: string;
  tag?: string;
  priority?: Priority;
  /** Only messages stored at least this many seconds ago. */
  older_than_s?: number;
}

export interface MailboxPurgeReply extends Mq9Reply {
  purged: number;
}

/** `$mq9.AI.GROUP.LIST.<mail_address>`. */
export interface GroupListReply extends Mq9Reply {
  groups: GroupSummary[];
}

/** `$mq9.AI.GROUP.INFO.<mail_address>`. */
export interface GroupInfoRequest {
  group_name: string;
}

export interface GroupInfoReply extends Mq9Reply {
  group: GroupSummary;
}

/** `$mq9.AI.GROUP.RESET.<mail_address>`: exactly one of `from_id`, `from_time` (Unix seconds) and `deliver`. */
export interface GroupResetRequest {
  group_name: string;
  from_id?: number;
  from_time?: number;
  deliver?: "earliest" | "latest";
}

/** `$mq9.AI.SERVER.INFO`: what the broker is and how it is doing. */
export interface ServerInfoReply extends Mq9Reply {
  version: string;
  started_at: number;
  uptime_s: number;
  /** The store, as the broker describes it ("SQLite in /data", "PostgreSQL (schema mq9)"). */
  store: string;
  /** Client connections of this node's own listener (0 for a cluster node: nats-server has them). */
  connections: number;
  /** Subscriptions held on this node's listener; null for a cluster node. */
  subscriptions: number | null;
  memory: { rss: number; heap_used: number; heap_total: number };
  /** The data directory's file system; null when the store keeps no files here. */
  disk: { data_dir: string; free_bytes: number; used_bytes: number } | null;
  /** null for a broker of its own. */
  cluster: { cluster: string; node: string; peers: { node: string; state: string; self: boolean }[] } | null;
}
