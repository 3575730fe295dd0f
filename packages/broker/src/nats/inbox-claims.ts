import { BrokerDefaults } from "../broker-defaults.js";
import type { InboxBinding } from "../store/inbox-bindings.js";
import type { Subscriber } from "./subscription.js";

const PREFIX = "_INBOX.";

/** How long an inbox whose owner's connection went away stays its user's (see BrokerDefaults). */
export const DEFAULT_INBOX_GRACE_MS: number = BrokerDefaults.inboxGraceMs;

/**
 * The inbox id of a subject: its second token when the subject starts with `_INBOX.` (`abc` of
 * `_INBOX.abc.7`). Undefined for other subjects; `"*"` or `">"` when the subject is a wildcard there.
 */
export function inboxIdOf(subject: string): string | undefined {
  if (!subject.startsWith(PREFIX)) return undefined;
  const end = subject.indexOf(".", PREFIX.length);
  return subject.slice(PREFIX.length, end < 0 ? subject.length : end);
}

interface Claim {
  owner: Subscriber;
  user: string;
  subs: number;
}

/**
 * Who owns which reply inbox, with users configured. The first connection to subscribe to
 * `_INBOX.<id>` (or anything under it) owns `<id>` until its last such subscription goes. Messages
 * on an inbox reach only its owner: another connection's `>` or `_INBOX.>` sees none of them, and
 * its SUB naming the inbox is refused. An inbox given up by UNSUB is free at once; one whose
 * connection closed (or whose broker restarted) stays bound to its user for a grace period, so
 * that only that user, reconnecting, can claim it again: its id may have been seen by others (it
 * is the reply subject of every request the client made), and whoever claimed it would receive
 * the replies still on their way to it.
 */
export class InboxClaims {
  private readonly owners = new Map<string, Claim>();
  /** Inboxes whose connection went away, by id, in the order their grace ends. */
  private readonly reserved = new Map<string, { user: string; untilMs: number }>();
  private changed = false;

  constructor(
    private readonly graceMs = DEFAULT_INBOX_GRACE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records a subscription on `id` by `owner`, signed in as `user`; false when the inbox is another's. */
  claim(id: string, owner: Subscriber, user: string): boolean {
    const claim = this.owners.get(id);
    if (claim === undefined) {
      const reservation = this.reserved.get(id);
      if (reservation !== undefined) {
        if (reservation.user !== user && reservation.untilMs > this.now()) return false;
        this.reserved.delete(id);
      }
      this.owners.set(id, { owner, user, subs: 1 });
      this.changed = true;
      return true;
    }
    if (claim.owner !== owner) return false;
    claim.subs++;
    return true;
  }

  /**
   * One of the owner's subscriptions on `id` is gone: by UNSUB (the inbox is free once the last
   * goes), or with its connection (`closed`: the inbox stays its user's for the grace period).
   */
  release(id: string, owner: Subscriber, closed = false): void {
    const claim = this.owners.get(id);
    if (claim === undefined || claim.owner !== owner) return;
    if (--claim.subs > 0) return;
    this.owners.delete(id);
    this.changed = true;
    if (closed && this.graceMs > 0)
      this.reserved.set(id, { user: claim.user, untilMs: this.now() + this.graceMs });
  }

  /** Who may receive a message on this subject: undefined when it is no inbox, null when unowned. */
  recipientOf(subject: string): Subscriber | null | undefined {
    const id = inboxIdOf(subject);
    if (id === undefined) return undefined;
    return this.owners.get(id)?.owner ?? null;
  }

  /** Forgets reservations whose grace is over (they are kept in the order it ends). */
  sweep(): void {
    const now = this.now();
    for (const [id, reservation] of this.reserved) {
      if (reservation.untilMs > now) break;
      this.reserved.delete(id);
      this.changed = true;
    }
  }

  /** Every inbox bound to a user (owned or in its grace), when that changed since the last call. */
  takeChanges(): InboxBinding[] | undefined {
    if (!this.changed) return undefined;
    this.changed = false;
    return this.bindings();
  }

  /** Every inbox bound to a user: owned now, or in its grace period. */
  bindings(): InboxBinding[] {
    const bound: InboxBinding[] = [];
    for (const [id, claim] of this.owners) bound.push({ id, user: claim.user });
    for (const [id, reservation] of this.reserved) bound.push({ id, user: reservation.user });
    return bound;
  }

  /** Binds inboxes kept from before a restart to their users, for the grace period from now. */
  restore(bindings: readonly InboxBinding[]): void {
    const untilMs = this.now() + this.graceMs;
    for (const { id, user } of bindings) {
      if (!this.owners.has(id)) this.reserved.set(id, { user, untilMs });
    }
  }

  /** Number of inboxes owned (for tests). */
  get size(): number {
    return this.owners.size;
  }
}
