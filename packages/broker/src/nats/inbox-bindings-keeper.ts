import type { Logger } from "../logger.js";
import type { InboxBindingsStore } from "../store/inbox-bindings.js";
import type { InboxClaims } from "./inbox-claims.js";

/** How often the bindings are saved when they changed. */
const SAVE_INTERVAL_MS = 1_000;

/**
 * Keeps the reply inboxes bound to users in the store, so that they stay bound across a restart
 * of the broker: a client that reconnects finds its inbox still its own, not claimed by another
 * user who connected first. Saved at most once a second when something changed (inboxes whose
 * grace ended are dropped then), and at close; a crash loses at most the last second's new ones.
 */
export class InboxBindingsKeeper {
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  /** The last save failed: the next flush saves again, changed or not. */
  private retry = false;

  constructor(
    private readonly store: InboxBindingsStore,
    private readonly claims: InboxClaims,
    private readonly logger: Logger,
  ) {}

  /** Binds the inboxes saved before the restart; call before accepting clients. */
  async restore(): Promise<void> {
    try {
      this.claims.restore(await this.store.load());
    } catch (err) {
      this.logger.warn(
        { err },
        "nats: cannot load the reply inboxes bound before the restart; they are free to claim",
      );
    }
  }

  /** Saves changes in the background from now on. */
  start(): void {
    this.timer = setInterval(() => this.flush(), SAVE_INTERVAL_MS);
    this.timer.unref();
  }

  /** Saves the bindings when they changed since the last save; one save at a time. */
  private flush(): Promise<void> {
    this.claims.sweep();
    const bindings = this.claims.takeChanges() ?? (this.retry ? this.claims.bindings() : undefined);
    if (bindings === undefined) return this.saving;
    this.retry = false;
    this.saving = this.saving.then(() =>
      this.store.save(bindings).catch((err) => {
        this.retry = true;
        this.logger.warn({ err }, "nats: cannot save the bound reply inboxes; trying again in a second");
      }),
    );
    return this.saving;
  }

  /** Stops the timer and saves what changed (call once every connection is closed, before the store closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
