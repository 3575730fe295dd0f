import type { Priority } from "@mq9/protocol";
import type { Registry as MetricsRegistry } from "prom-client";
import type { Logger } from "../logger.js";
import type { InboxBindingsStore } from "./inbox-bindings.js";
import type { SharedDatabase } from "./shared-database.js";

/** A mailbox as the store keeps it. */
export interface MailboxRecord {
  address: string;
  /** Seconds; 0 = never expires. */
  ttlSeconds: number;
  desc: string;
  createdMs: number;
  /** When the mailbox stops existing; undefined = never. */
  expiresMs?: number;
  /** The user that created it, when users are configured; only it (or a grant, or an admin) reads it. */
  owner?: string;
  /** The default of its groups' DeliveryPolicy.maxDeliver (undefined or 0: no limit). */
  maxDeliver?: number;
  /** Where its dead letters go; undefined: `<address>.dlq` (see deadLetterAddressOf). */
  deadLetter?: string;
}

/**
 * How a consumer group delivers a message again: at most `maxDeliver` times in all (then it goes to
 * the dead-letter mailbox; undefined or 0: no limit), waiting `backoffMs[n-1]` after its n-th
 * failure (the last step repeats; none: at once).
 */
export interface DeliveryPolicy {
  maxDeliver?: number;
  backoffMs?: readonly number[];
}

/** A message handed to the store by SEND. */
export interface NewMessage {
  mailbox: string;
  priority: Priority;
  key?: string;
  tags?: string[];
  /** Raw NATS header block of the SEND, when it had one. */
  header?: Uint8Array;
  payload: Uint8Array;
  sentMs: number;
  /** Set for a delayed message: it joins the mailbox (and gets its id) at this time. */
  dueMs?: number;
  expiresMs?: number;
  /**
   * The SEND's idempotency key and until when it is remembered: while it is, another message with
   * the key in this mailbox is not stored, and gets this one's id (see AppendResult).
   */
  dedup?: { key: string; untilMs: number };
}

export interface StoredMessage {
  id: number;
  priority: Priority;
  key?: string;
  tags?: string[];
  header?: Uint8Array;
  payload: Uint8Array;
  createdMs: number;
  expiresMs?: number;
  /** Set by a claim: how many times the group has been handed the message, this time included. */
  deliveryCount?: number;
}

/** A group's message whose deliveries are used up (or that was NAKed terminally), for the dead-letter sweep. */
export interface DeadLetter {
  mailbox: string;
  group: string;
  message: StoredMessage;
  deliveryCount: number;
  /** The last failure's reason (a NAK's), when one was given. */
  reason?: string;
  /** The mailbox it goes to (see deadLetterAddressOf). */
  deadLetterAddress: string;
  /** The owner of its mailbox, who owns the dead-letter mailbox made for it. */
  owner?: string;
}

/** What a NAK asks (see Store.nak). */
export interface NakOptions {
  nowMs: number;
  reason?: string;
  /** Wait before delivering it again; default: the group's backoff. */
  delayMs?: number;
  /** Straight to the dead-letter mailbox. */
  terminal?: boolean;
}

/** The outcome of a NAK: whether the group held the message, and whether it now waits for the sweep. */
export interface NakResult {
  found: boolean;
  deadLetter: boolean;
}

/** Where a mailbox's dead letters go: the one named at CREATE, else `<address>.dlq`. */
export function deadLetterAddressOf(record: Pick<MailboxRecord, "address" | "deadLetter">): string {
  if (record.deadLetter) return record.deadLetter;
  // Kept within the 128 characters of a mail address.
  return `${record.address.slice(0, 124)}.dlq`;
}

/**
 * Outcome of one message of an append batch: its id (-1 when delayed) or the missing mailbox.
 * `duplicate`: its idempotency key was taken within the window; nothing was stored and `id` is
 * the original's.
 */
export type AppendResult = { id: number; duplicate?: true } | { missingMailbox: true };

/** Where a consumer starts, already resolved to a msg_id (every id >= it is eligible). */
export interface StartPosition {
  fromId: number;
  /** Stateless `from_time`: only messages created at or after this time. */
  fromCreatedMs?: number;
}

export interface ReadOptions {
  limit: number;
  /** Stop adding messages once their payload bytes reach this budget (at least one is returned). */
  maxBytes: number;
  nowMs: number;
}

export interface ClaimOptions extends ReadOptions {
  /** Used when the group is new, or always when `reset` is set (force_deliver). */
  start: StartPosition;
  reset: boolean;
  leaseMs: number;
  /** The consumer, kept with its leases (see Lease.member). */
  member?: string;
  /** Given by this FETCH: the group remembers it (each field replaces the one it had). */
  policy?: DeliveryPolicy;
}

/** What QUERY asks of a mailbox: filters that all hold, and how many of the newest matches. */
export interface StoreQuery {
  key?: string;
  tags?: string[];
  /** Only messages created at or after this time. */
  createdFromMs?: number;
  /** Only messages of this priority class. */
  priority?: Priority;
  /** Only messages with a smaller msg_id (paging back from the newest). */
  beforeId?: number;
  limit: number;
  nowMs: number;
}

export interface PurgeResult {
  mailboxes: string[];
  messages: number;
}

/**
 * What a store is and can do, as data: the layers above branch on these, never on a store's
 * class (test/store-seam.test.ts fails on an `instanceof` of a store outside `store/`).
 */
export interface StoreCapabilities {
  /**
   * Several brokers may serve the same state at once (a database server's store): cluster mode
   * needs such a store, and sharedDatabase() then gives the layers above the same database.
   */
  readonly shared: boolean;
  /**
   * append() does its work in another process (a database server): the next batch is then
   * handed over before the callers of the last one are answered, so the two overlap. A store
   * that appends on this thread says false (it would hold those answers back).
   */
  readonly appendsElsewhere: boolean;
}

/** What /healthz says of a store (the transport adds its own details). */
export interface StoreHealth {
  /** False while the store cannot serve what it should (writes, or every request). */
  ok: boolean;
  /**
   * "full": writes fail for lack of space, reads go on, the store recovers by itself;
   * "unavailable": the database does not answer, or the store refuses every request.
   */
  storage: "ok" | "full" | "unavailable";
  /** Details of the store's own, under its name (PostgreSQL: `postgres: { up, refused? }`). */
  [detail: string]: unknown;
}

/** What a store is told when a broker starts watching it (see Store.watch). */
export interface StoreWatchOptions {
  /** Where the store's gauges go: the broker's /metrics. */
  metrics: MetricsRegistry;
  /** Told when what the store watches changes (its database stops or starts answering). */
  logger: Logger;
  /** The broker is a node of a cluster: gauges of the shared database are named so. */
  cluster: boolean;
  /**
   * Called once, should the store start refusing every request (a newer mq9 migrated its
   * schema): a cluster node then leaves its queue group, so the new nodes take its requests.
   */
  onRefused?: (why: string) => void;
}

/**
 * Where mailboxes, messages and consumer-group state live. Every method is
 * atomic. Ids of one mailbox start at 0, grow in send order across all
 * priorities, are never reused, and become visible in increasing order.
 * Implementations pass test/store-conformance.ts.
 *
 * Besides the messaging methods, a store tells the broker what it is (`capabilities`,
 * `describe`), how it is (`health`, `watch`), where the reply inboxes bound to users are kept
 * (`inboxBindings`) and, when it is shared, the database a cluster shares (`sharedDatabase`):
 * the transports, the registry and the CLI ask these, so a new store gets health, metrics,
 * inboxes that survive a restart and cluster join by implementing them. See CONTRIBUTING.md, "Adding a store".
 */
export interface Store {
  /** What the store is and can do; fixed for its life. */
  readonly capabilities: StoreCapabilities;
  /** What the store is, for logs: "SQLite in ./mq9-data", "PostgreSQL (schema mq9)". */
  describe(): string;
  /** Whether the store serves now, as /healthz shows it; cheap (looked at on each request of it). */
  health(): StoreHealth;
  /**
   * Starts what the store watches itself by (a database server's store probes whether its
   * database answers) and adds its gauges to `options.metrics`; close() stops it.
   */
  watch(options: StoreWatchOptions): void;
  /**
   * The database the brokers sharing this store share, for a cluster's join and once-per-cluster
   * locks and for higher layers' tables (the registry); undefined unless `capabilities.shared`.
   */
  sharedDatabase(): SharedDatabase | undefined;
  /**
   * Where the embedded listener keeps the reply inboxes bound to users across a restart (see
   * InboxBindingsStore); undefined when the store keeps nothing across one (SQLite in memory), and
   * the bindings then live in memory only. A cluster's nodes do not ask: nats-server has the inboxes.
   */
  inboxBindings(): InboxBindingsStore | undefined;
  /** Creates a mailbox; false when a live one with that address exists (an expired one is replaced). */
  createMailbox(record: MailboxRecord, nowMs: number): Promise<boolean>;
  /** The live mailbox, or undefined when it never existed or has expired. */
  getMailbox(address: string, nowMs: number): Promise<MailboxRecord | undefined>;
  /**
   * Stores a batch in one commit, in order, applying key compaction; delayed messages get id -1.
   * A message whose idempotency key (`dedup`) the mailbox remembers, or an earlier one of the
   * batch carries, is not stored. Fails with a StorageError; one with `outcomeUnknown` set when
   * the commit may have happened all the same (see isOutcomeUnknown).
   */
  append(batch: readonly NewMessage[], nowMs: number): Promise<AppendResult[]>;
  /** The id the next message of the mailbox will get. */
  nextMessageId(mailbox: string): Promise<number>;
  /** The first id whose message was created at or after the time; nextMessageId when none. */
  firstIdCreatedAtOrAfter(mailbox: string, createdMs: number): Promise<number>;
  /** Stateless read: eligible messages from `start`, critical then urgent then normal, FIFO within each. */
  read(mailbox: string, start: StartPosition, options: ReadOptions): Promise<StoredMessage[]>;
  hasGroup(mailbox: string, group: string): Promise<boolean>;
  /**
   * Hands the next eligible messages to one member of a group and leases them:
   * un-ACKed, un-leased, un-expired, from the group's position, in priority order.
   */
  claim(mailbox: string, group: string, options: ClaimOptions): Promise<StoredMessage[]>;
  /**
   * Acknowledges the message and every message delivered before it in the same
   * claim. False when the message was never delivered to the group.
   */
  ack(mailbox: string, group: string, msgId: number, nowMs: number): Promise<boolean>;
  /**
   * Gives a message leased to the group back before its lease ends: delivered again after the
   * delay (default: the group's backoff), or held for the dead-letter sweep when `terminal` or
   * when its deliveries are used up. `found` false: the group holds no lease of it (nothing changed).
   */
  nak(mailbox: string, group: string, msgId: number, options: NakOptions): Promise<NakResult>;
  /** Messages of any group whose deliveries are used up, or NAKed terminally, at most `limit`. */
  deadLetters(nowMs: number, limit: number): Promise<DeadLetter[]>;
  /**
   * Ends the group's hold on dead letters once their copies are stored in the dead-letter mailbox:
   * for that group they count as ACKed (and as dead-lettered). Ids it does not hold are passed over.
   */
  settleDeadLetters(
    letters: readonly Pick<DeadLetter, "mailbox" | "group" | "message">[],
    nowMs: number,
  ): Promise<void>;
  /** Live messages matching every given filter; the most recent `limit`, ascending by id. */
  query(mailbox: string, options: StoreQuery): Promise<StoredMessage[]>;
  /** False when the mailbox holds no message with that id. */
  deleteMessage(mailbox: string, msgId: number): Promise<boolean>;
  /** Moves delayed messages whose time has come into their mailboxes; returns those mailboxes. */
  promoteDue(nowMs: number): Promise<string[]>;
  /** The earliest due time of a waiting delayed message. */
  nextDueMs(): Promise<number | undefined>;
  /**
   * Deletes expired mailboxes (with their messages, delayed messages and groups), expired messages
   * and the idempotency keys whose window has passed.
   */
  purgeExpired(nowMs: number): Promise<PurgeResult>;
  close(): Promise<void>;
}
