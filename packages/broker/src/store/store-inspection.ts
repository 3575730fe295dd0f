import type { Priority } from "@mq9/protocol";
import type { MailboxRecord } from "./store.js";

/** A live mailbox with what it holds, as the dashboard and the REST API list it. */
export interface MailboxStats extends MailboxRecord {
  /** Live messages per priority class. */
  depth: Record<Priority, number>;
  /** Bytes the live messages take in the store (header and payload, as /metrics counts them). */
  bytes: number;
  /** When the oldest live message was stored; undefined when the mailbox is empty. */
  oldestMs?: number;
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
  /** Live messages the group has not ACKed (leased ones included). */
  lag: number;
  /** Messages delivered to a member whose lease still runs. */
  leased: number;
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
  /** Deletes every message of a live mailbox (it and its groups stay); undefined when there is none. */
  purgeMailbox(address: string, nowMs: number): Promise<number | undefined>;
}

/** Whether a store offers the inspection operations. */
export function canInspect(store: object): store is StoreInspection {
  return typeof (store as Partial<StoreInspection>).mailboxStats === "function";
}
