import type { Priority } from "@mq9/protocol";
import type { MailboxRecord } from "./store.js";

/** A live mailbox with what it holds, as the dashboard and the REST API list it. */
export interface MailboxStats extends MailboxRecord {
  /** Live messages per priority class. */
  depth: Record<Priority, number>;
  /** Bytes the live messages take in the store (header and payload, as /metrics counts them). */
  bytes: number;
  bytesByPriority: Record<Priority, number>;
  /** When the oldest live message was stored; undefined when the mailbox is empty. */
  oldestMs?: number;
  /** When the newest live message was stored; undefined when the mailbox is empty. */
  newestMs?: number;
  /** Delayed messages not due yet. */
  delayed: number;
  /** Consumer groups that have fetched from the mailbox. */
  groups: number;
}

export interface StoreTotals {
  mailboxes: number;
  messages: number;
  bytes: number;
}

export interface MailboxStatsOptions {
  search?: string;
  exact?: boolean;
  limit: number;
}

/** A consumer group of a mailbox: what it has still to take, and what it holds leased. */
export interface GroupStats {
  name: string;
  /** Per priority rank (critical, urgent, normal): the class cursor, the lowest id not ACKed yet. */
  cursors: number[];
  /** Live messages the group has not ACKed (leased ones included). */
  lag: number;
  /** Messages delivered to a member whose lease still runs. */
  leased: number;
  /** When the oldest live message the group has not ACKed was stored; undefined when none. */
  oldestUnackedMs?: number;
}

/** Which messages a PURGE deletes: those that match every filter given (all, with none). */
export interface PurgeFilter {
  key?: string;
  tag?: string;
  priority?: Priority;
  /** Only messages stored at or before this time. */
  createdUpToMs?: number;
}

/** Whether a filter lets every message through. */
export function purgesAll(filter: PurgeFilter | undefined): boolean {
  return (
    filter === undefined ||
    (filter.key === undefined &&
      filter.tag === undefined &&
      filter.priority === undefined &&
      filter.createdUpToMs === undefined)
  );
}

/** The live mailboxes of one owner: how many, and the first few addresses in order. */
export interface OwnedMailboxes {
  owner: string;
  count: number;
  addresses: string[];
}

/** Rows of (owner, address, count), sorted by owner, grouped per owner. */
export function ownersOf(rows: readonly { owner: string; address: string; n: number }[]): OwnedMailboxes[] {
  const owners: OwnedMailboxes[] = [];
  for (const row of rows) {
    const last = owners.at(-1);
    if (last?.owner === row.owner) last.addresses.push(row.address);
    else owners.push({ owner: row.owner, count: Number(row.n), addresses: [row.address] });
  }
  return owners;
}

/**
 * Read and admin operations beyond the mq9 protocol (which has no LIST or mailbox DELETE),
 * for the HTTP API. A Store may offer them; the engine answers a clear error when it does not.
 */
export interface StoreInspection {
  /** Live mailboxes whose address contains `search` (or is it, when `exact`), by address, at most `limit`. */
  mailboxStats(nowMs: number, options: MailboxStatsOptions): Promise<MailboxStats[]>;
  /** How much the store holds: live mailboxes, live messages and their bytes. */
  totals(nowMs: number): Promise<StoreTotals>;
  /** The groups of a live mailbox; undefined when there is no such mailbox. */
  groupStats(address: string, nowMs: number): Promise<GroupStats[] | undefined>;
  /** Every owner of live mailboxes, with at most `examples` of each one's addresses (checked at start). */
  mailboxOwners(nowMs: number, examples: number): Promise<OwnedMailboxes[]>;
  /** Deletes a live mailbox with its messages and groups; false when there is none. */
  deleteMailbox(address: string, nowMs: number): Promise<boolean>;
  /**
   * Deletes the messages of a live mailbox that match `filter` (it and its groups stay): with no
   * filter every message, delayed ones too; with one, the stored messages that match it. Returns
   * how many went; undefined when there is no such mailbox.
   */
  purgeMailbox(address: string, nowMs: number, filter?: PurgeFilter): Promise<number | undefined>;
  /**
   * Restarts an existing group of a live mailbox at `fromId` (every class cursor), dropping its
   * leases and ACKs, durably; false when there is no such group.
   */
  resetGroup(address: string, group: string, fromId: number, nowMs: number): Promise<boolean>;
}

/** Whether a store offers the inspection operations. */
export function canInspect(store: object): store is StoreInspection {
  return typeof (store as Partial<StoreInspection>).mailboxStats === "function";
}
