import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";

export interface ExpirySchedulerOptions {
  store: Store;
  /** Called with each mailbox that got messages from promoted delayed sends. */
  onPromoted: (mailbox: string) => void;
  sweepIntervalMs: number;
  now: () => number;
  logger: Logger;
}

/**
 * Background work on one timer: promotes delayed messages the moment they
 * are due, and purges expired mailboxes and messages on every sweep. Nothing
 * is touched before its time; readers already hide what expired in between.
 */
export class ExpiryScheduler {
  private timer?: NodeJS.Timeout;
  private wakeAtMs = Number.POSITIVE_INFINITY;
  private running?: Promise<void>;
  private stopped = false;

  /** Why the last sweep failed; undefined after one that worked. */
  private failure?: string;

  constructor(private readonly options: ExpirySchedulerOptions) {}

  start(): void {
    this.stopped = false;
    this.runSoon(0);
  }

  /** A delayed message was stored: make sure the timer fires by its due time. */
  delayedStored(dueMs: number): void {
    if (dueMs < this.wakeAtMs) this.runSoon(dueMs - this.options.now());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private runSoon(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const waitMs = Math.max(0, delayMs);
    this.wakeAtMs = this.options.now() + waitMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.wakeAtMs = Number.POSITIVE_INFINITY;
      this.running = this.tick().finally(() => {
        this.running = undefined;
      });
    }, waitMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const { store, now, logger, sweepIntervalMs } = this.options;
    try {
      for (const mailbox of await store.promoteDue(now())) this.options.onPromoted(mailbox);
      const purged = await store.purgeExpired(now());
      if (purged.mailboxes.length > 0 || purged.messages > 0) {
        logger.debug(
          { mailboxes: purged.mailboxes.length, messages: purged.messages },
          "purged expired data",
        );
      }
      if (this.failure !== undefined) logger.info("expiry sweeps work again");
      this.failure = undefined;
    } catch (err) {
      // Once per cause: a database that is away, or a schema a newer mq9 took over, fails every sweep.
      const cause = (err as Error).message;
      if (cause !== this.failure) logger.error({ err }, "expiry sweep failed; retrying on each sweep");
      this.failure = cause;
    }
    const nextDue = await store.nextDueMs().catch(() => undefined);
    const untilSweep = sweepIntervalMs;
    const untilDue = nextDue === undefined ? untilSweep : nextDue - now();
    this.runSoon(Math.min(untilSweep, untilDue));
  }
}
