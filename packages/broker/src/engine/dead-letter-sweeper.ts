import { encodeHeaderBlock, Headers, parseHeaderBlock } from "@mq9/protocol";
import type { Logger } from "../logger.js";
import type { DeadLetter, NewMessage, Store } from "../store/store.js";

/**
 * How long the key of a dead letter's move is remembered: a broker killed between storing the
 * copy and ending the group's hold finds the key when it moves the message again, and stores no
 * second copy. It only has to outlast such a restart.
 */
export const DEAD_LETTER_KEY_WINDOW_MS = 24 * 3600 * 1000;

/** Most dead letters moved per store round trip. */
const BATCH = 100;

export interface DeadLetterSweeperOptions {
  store: Store;
  now: () => number;
  logger: Logger;
  intervalMs: number;
  /** Called once a batch's copies are stored: per dead-letter mailbox, how many arrived. */
  onMoved: (deadLetterAddress: string, count: number) => void;
}

/** The idempotency key of a message's move to dead letters (the same for every attempt at it). */
export function deadLetterKey(letter: Pick<DeadLetter, "mailbox" | "group" | "message">): string {
  return `mq9-dlq:${letter.mailbox}:${letter.group}:${letter.message.id}`;
}

/** The dead letter's header block: the message's own headers, then where it failed and why. */
export function deadLetterHeader(letter: DeadLetter, nowMs: number): Uint8Array {
  const own = letter.message.header ? [...parseHeaderBlock(letter.message.header)] : [];
  const kept = own.filter(([name]) => !name.startsWith("mq9-dlq-"));
  const added: [string, string][] = [
    [Headers.dlqMailbox, letter.mailbox],
    [Headers.dlqGroup, letter.group],
    [Headers.dlqMsgId, String(letter.message.id)],
    [Headers.dlqDeliveryCount, String(letter.deliveryCount)],
    [Headers.dlqTime, String(Math.floor(nowMs / 1000))],
  ];
  // One line per header: a reason is the consumer's text and may hold anything.
  if (letter.reason !== undefined) added.push([Headers.dlqReason, letter.reason.replace(/[\r\n]+/g, " ")]);
  return encodeHeaderBlock([...kept, ...added]);
}

/**
 * Moves messages whose deliveries are used up to their dead-letter mailbox: each copy is stored
 * under an idempotency key first, and only then does the group let go of the message, so a kill
 * between the two stores no second copy and loses none. Runs every `intervalMs`, and at once when
 * kicked (a terminal NAK).
 */
export class DeadLetterSweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = true;
  private failure?: string;

  constructor(private readonly options: DeadLetterSweeperOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Sweeps now (or right after the sweep under way). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One sweep: every held message, BATCH at a time. */
  private async sweepOnce(): Promise<void> {
    const { store, now } = this.options;
    for (;;) {
      const letters = await store.deadLetters(now(), BATCH);
      if (letters.length > 0) await this.move(letters);
      if (letters.length < BATCH) return;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.run();
    }, this.options.intervalMs);
    this.timer.unref();
  }

  private run(): void {
    this.running = this.sweepOnce()
      .then(
        () => {
          if (this.failure !== undefined) this.options.logger.info("dead-letter sweeps work again");
          this.failure = undefined;
        },
        (err: unknown) => {
          const cause = (err as Error).message;
          if (cause !== this.failure) {
            this.options.logger.error(
              { err },
              "dead-letter sweep failed; the messages stay held and are retried",
            );
          }
          this.failure = cause;
        },
      )
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.run();
        } else {
          this.schedule();
        }
      });
  }

  private async move(letters: readonly DeadLetter[]): Promise<void> {
    const { store, now } = this.options;
    const nowMs = now();
    for (const address of new Set(letters.map((l) => l.deadLetterAddress))) {
      const owner = letters.find((l) => l.deadLetterAddress === address)?.owner;
      await this.ensureMailbox(address, owner, nowMs);
    }
    const copies: NewMessage[] = letters.map((letter) => ({
      mailbox: letter.deadLetterAddress,
      priority: letter.message.priority,
      key: undefined,
      tags: letter.message.tags,
      header: deadLetterHeader(letter, nowMs),
      payload: letter.message.payload,
      sentMs: nowMs,
      dedup: { key: deadLetterKey(letter), untilMs: nowMs + DEAD_LETTER_KEY_WINDOW_MS },
    }));
    const results = await store.append(copies, nowMs);
    const stored = letters.filter((_, i) => !("missingMailbox" in results[i]));
    // A mailbox that went away in between: those stay held and are moved on the next sweep.
    await store.settleDeadLetters(stored, nowMs);
    // A copy stored before a restart (its key found): settled now, but not moved again.
    const moved = letters.filter((_, i) => {
      const result = results[i];
      return !("missingMailbox" in result) && result.duplicate !== true;
    });
    const perMailbox = new Map<string, number>();
    for (const letter of moved) {
      perMailbox.set(letter.deadLetterAddress, (perMailbox.get(letter.deadLetterAddress) ?? 0) + 1);
      this.options.logger.info(
        {
          mailbox: letter.mailbox,
          group: letter.group,
          msgId: letter.message.id,
          deliveries: letter.deliveryCount,
          deadLetter: letter.deadLetterAddress,
          reason: letter.reason,
        },
        "moved a message to its dead-letter mailbox",
      );
    }
    for (const [address, count] of perMailbox) this.options.onMoved(address, count);
  }

  /** The dead-letter mailbox, made on first use: no expiry, owned by the mailbox's owner. */
  private async ensureMailbox(address: string, owner: string | undefined, nowMs: number): Promise<void> {
    const { store } = this.options;
    if (await store.getMailbox(address, nowMs)) return;
    await store.createMailbox(
      { address, ttlSeconds: 0, desc: "dead letters", createdMs: nowMs, owner },
      nowMs,
    );
  }
}
