import type { Subscriber } from "./subscription.js";

const PREFIX = "_INBOX.";

/**
 * The inbox id of a subject: its second token when the subject starts with `_INBOX.` (`abc` of
 * `_INBOX.abc.7`). Undefined for other subjects; `"*"` or `">"` when the subject is a wildcard there.
 */
export function inboxIdOf(subject: string): string | undefined {
  if (!subject.startsWith(PREFIX)) return undefined;
  const end = subject.indexOf(".", PREFIX.length);
  return subject.slice(PREFIX.length, end < 0 ? subject.length : end);
}

/**
 * Who owns which reply inbox, with users configured. The first connection to subscribe to
 * `_INBOX.<id>` (or anything under it) owns `<id>` until its last such subscription goes. Messages
 * on an inbox reach only its owner: another connection's `>` or `_INBOX.>` sees none of them, and
 * its SUB naming the inbox is refused. Clients pick inbox ids at random (nats.js: 22 base62
 * characters), so nobody can take one that another client is about to use.
 */
export class InboxClaims {
  private readonly owners = new Map<string, { owner: Subscriber; subs: number }>();

  /** Records a subscription on `id` by `owner`; false when another connection owns it. */
  claim(id: string, owner: Subscriber): boolean {
    const claim = this.owners.get(id);
    if (claim === undefined) {
      this.owners.set(id, { owner, subs: 1 });
      return true;
    }
    if (claim.owner !== owner) return false;
    claim.subs++;
    return true;
  }

  /** One of the owner's subscriptions on `id` is gone. */
  release(id: string, owner: Subscriber): void {
    const claim = this.owners.get(id);
    if (claim === undefined || claim.owner !== owner) return;
    if (--claim.subs <= 0) this.owners.delete(id);
  }

  /** Who may receive a message on this subject: undefined when it is no inbox, null when unowned. */
  recipientOf(subject: string): Subscriber | null | undefined {
    const id = inboxIdOf(subject);
    if (id === undefined) return undefined;
    return this.owners.get(id)?.owner ?? null;
  }

  /** Number of inboxes owned (for tests). */
  get size(): number {
    return this.owners.size;
  }
}
