/**
 * Who a client authenticated as, as the mq9 service sees it: the name that owns the mailboxes and
 * registrations it creates, whether it may act on everything, and the mailboxes the configuration
 * lets it read although it did not create them.
 */
export interface Principal {
  readonly name: string;
  readonly admin: boolean;
  /** Mail-address patterns (NATS wildcards over the dot-separated name): read and manage as an owner. */
  readonly mailboxGrants: readonly string[];
}

/**
 * The form in which two names count as one (user names, agent names): Unicode NFKC, then lower
 * case, so that `Translator` and `translator`, or a full-width `Ａ` and `A`, are not two owners.
 */
export function foldName(name: string): string {
  return name.normalize("NFKC").toLowerCase();
}
