/** A reply inbox (`_INBOX.<id>`) and the user it is bound to, as kept across a restart. */
export interface InboxBinding {
  id: string;
  user: string;
}

/**
 * Where a store keeps the reply inboxes bound to users (docs/security.md), so that after a restart
 * of the broker no other user can claim an inbox before its owner reconnects. The embedded
 * listener loads them once at start and saves the whole set when it changed (at most once a
 * second) and at a clean stop; a save replaces what was saved before.
 */
export interface InboxBindingsStore {
  /** The bindings saved last; empty when none were. */
  load(): Promise<InboxBinding[]>;
  /** Replaces the saved bindings with these. */
  save(bindings: readonly InboxBinding[]): Promise<void>;
}
