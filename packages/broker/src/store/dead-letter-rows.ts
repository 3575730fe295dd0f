import { type DeadLetter, deadLetterAddressOf, type StoredMessage } from "./store.js";

/** What both stores read of a held dead letter, as their rows hold it (null: not set). */
export interface HeldLetterFields {
  mailbox: string;
  group: string;
  message: StoredMessage;
  deliveryCount: number;
  reason: string | null;
  /** The mailbox's own dead-letter mailbox, if CREATE named one. */
  deadLetter: string | null;
  owner: string | null;
}

/** A held message as the dead-letter sweep gets it. */
export function deadLetterOf(fields: HeldLetterFields): DeadLetter {
  const letter: DeadLetter = {
    mailbox: fields.mailbox,
    group: fields.group,
    message: fields.message,
    deliveryCount: fields.deliveryCount,
    deadLetterAddress: deadLetterAddressOf({
      address: fields.mailbox,
      deadLetter: fields.deadLetter ?? undefined,
    }),
  };
  if (fields.reason !== null) letter.reason = fields.reason;
  if (fields.owner !== null) letter.owner = fields.owner;
  return letter;
}

/** Dead letters to settle, per mailbox and group, each with its msg_ids. */
export function lettersByGroup(
  letters: readonly Pick<DeadLetter, "mailbox" | "group" | "message">[],
): { mailbox: string; group: string; ids: number[] }[] {
  const byGroup = new Map<string, { mailbox: string; group: string; ids: number[] }>();
  for (const letter of letters) {
    const key = JSON.stringify([letter.mailbox, letter.group]);
    let entry = byGroup.get(key);
    if (!entry) {
      entry = { mailbox: letter.mailbox, group: letter.group, ids: [] };
      byGroup.set(key, entry);
    }
    entry.ids.push(letter.message.id);
  }
  return [...byGroup.values()];
}
