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
  /** The default delivery limit of its groups; null: none. */
  max_deliver: number | null;
  /** Where its dead letters go. */
  dead_letter: string;
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
  /** Messages in flight delivered more than once. */
  redelivered: number;
  /** Messages the group gave up to the dead-letter mailbox so far. */
  dead_lettered: number;
  /** The group's delivery limit (null: none) and backoff steps in ms. */
  max_deliver: number | null;
  backoff_ms: number[];
  /** Per member, how many messages it holds leased now. */
  members: { member: string; leased: number }[];
  /** GROUP.INFO only: the messages in flight, by msg_id (at most 100); clients must ignore fields they do not know. */
  leases?: LeaseSummary[];
}

/** A message a group has delivered and not ACKed. */
export interface LeaseSummary {
  msg_id: number;
  /** The consumer holding it; null when it gave no name. */
  member: string | null;
  delivery_count: number;
  /** `leased` (a member holds it), `waiting` (to be delivered again), `dead` (to the dead-letter mailbox). */
  state: "leased" | "waiting" | "dead";
  lease_until: number;
  /** When a waiting message may go again. */
  retry_at: number | null;
  reason: string | null;
}

/** `$mq9.AI.GROUP.RELEASE.<mail_address>`: end a member's (or every member's) running leases now. */
export interface GroupReleaseRequest {
  group_name: string;
  member?: string;
}

export interface GroupReleaseReply extends Mq9Reply {
  released: number;
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
