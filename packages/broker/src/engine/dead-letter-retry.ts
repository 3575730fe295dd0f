import {
  Errors,
  encodeHeaderBlock,
  Headers,
  Mq9Error,
  parseHeaderBlock,
  parseSendOptions,
} from "@mq9/protocol";
import type { NewMessage, Store, StoredMessage } from "../store/store.js";
import { DEAD_LETTER_KEY_WINDOW_MS } from "./dead-letter-sweeper.js";

/** Dead letters read per round trip when all are retried. */
const BATCH = 200;
/** Byte budget of one read (a dead letter is retried whole, whatever its size). */
const READ_BYTES = 8 * 1024 * 1024;

/** The SEND a dead letter becomes again: its own headers, without the dead-letter ones and its delay. */
function resend(letter: StoredMessage, deadLetterAddress: string, nowMs: number): NewMessage | string {
  const headers = letter.header ? parseHeaderBlock(letter.header) : new Map<string, string>();
  const origin = headers.get(Headers.dlqMailbox);
  if (origin === undefined)
    return `${Errors.messageNotFound}: message ${letter.id} of ${deadLetterAddress} is not a dead letter (it has no ${Headers.dlqMailbox} header)`;
  const kept = [...headers].filter(([name]) => !name.startsWith("mq9-dlq-") && name !== Headers.delay);
  const options = parseSendOptions(new Map(kept));
  const ttlSeconds = options.ok ? options.value.ttlSeconds : undefined;
  return {
    mailbox: origin,
    priority: letter.priority,
    key: options.ok ? options.value.key : undefined,
    tags: letter.tags,
    header: kept.length > 0 ? encodeHeaderBlock(kept) : undefined,
    payload: letter.payload,
    sentMs: nowMs,
    expiresMs: ttlSeconds ? nowMs + ttlSeconds * 1000 : undefined,
    // A retry cut short by a kill and asked again stores one copy, not two.
    dedup: { key: `mq9-retry:${deadLetterAddress}:${letter.id}`, untilMs: nowMs + DEAD_LETTER_KEY_WINDOW_MS },
  };
}

/**
 * Sends dead letters back to the mailboxes they came from, each stored there before it leaves
 * the dead-letter mailbox. One (`msgId`: an error when it cannot go back) or all (those that
 * cannot, because they are no dead letters or their mailbox is gone, stay). Returns how many went.
 */
export async function retryDeadLetters(
  store: Store,
  deadLetterAddress: string,
  msgId: number | undefined,
  now: () => number,
  woken: (mailbox: string) => void,
): Promise<number> {
  let retried = 0;
  // Letters that stay (no dead letters, mailbox gone): read past on the next round.
  const stay = new Set<number>();
  for (;;) {
    const nowMs = now();
    const limit = BATCH + stay.size;
    const read = await store.read(
      deadLetterAddress,
      { fromId: msgId ?? 0 },
      { limit, maxBytes: READ_BYTES, nowMs },
    );
    const letters = read.filter((m) => (msgId === undefined ? !stay.has(m.id) : m.id === msgId));
    if (msgId !== undefined && letters.length === 0)
      throw new Mq9Error("MESSAGE_NOT_FOUND", Errors.messageNotFound);
    for (const letter of letters) {
      const message = resend(letter, deadLetterAddress, nowMs);
      if (typeof message === "string") {
        // No dead letter by that id: as for any message that is not there.
        if (msgId !== undefined) throw new Mq9Error("MESSAGE_NOT_FOUND", message);
        stay.add(letter.id);
        continue;
      }
      const [result] = await store.append([message], nowMs);
      if ("missingMailbox" in result) {
        if (msgId !== undefined)
          throw new Mq9Error("MAILBOX_NOT_FOUND", Errors.mailboxMissing(message.mailbox));
        stay.add(letter.id);
        continue;
      }
      await store.deleteMessage(deadLetterAddress, letter.id);
      woken(message.mailbox);
      retried++;
    }
    if (msgId !== undefined || read.length < limit) return retried;
  }
}
