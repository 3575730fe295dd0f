import type { AppendResult, NewMessage, Store } from "../store/store.js";

/** Told once the commit holding a message is done: its result, or why the commit failed. */
export type AppendDone = (err: unknown, result?: AppendResult) => void;

/**
 * Group commit: SENDs that arrive while a commit is running (or within the
 * same tick) are written together in the next commit, so throughput does not
 * depend on one transaction per message. Each caller is answered only after
 * the commit holding its message succeeded. Callers pass a callback, not await a promise:
 * SEND is the hottest path, and a promise per message was a measurable part of its cost.
 */
export class SendBatcher {
  /** Queued messages and, at the same index, whom to tell once each is committed. */
  private messages: NewMessage[] = [];
  private dones: AppendDone[] = [];
  private flushing = false;
  private scheduled = false;
  /** Callers of drained() waiting for the queue to empty. */
  private drainWaiters: (() => void)[] = [];

  constructor(
    private readonly store: Store,
    private readonly onCommitted: (batch: readonly NewMessage[], results: AppendResult[]) => void,
    private readonly now: () => number = Date.now,
    private readonly maxBatch = 4096,
  ) {}

  append(message: NewMessage, done: AppendDone): void {
    this.messages.push(message);
    this.dones.push(done);
    this.schedule();
  }

  /** Resolves once everything queued so far is committed (or failed). */
  drained(): Promise<void> {
    if (this.messages.length === 0 && !this.flushing) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.messages.length > 0) {
      // The whole queue is the batch (the usual case): handed over, not copied.
      let messages = this.messages;
      let dones = this.dones;
      if (messages.length > this.maxBatch) {
        messages = this.messages.splice(0, this.maxBatch);
        dones = this.dones.splice(0, this.maxBatch);
      } else {
        this.messages = [];
        this.dones = [];
      }
      let results: AppendResult[];
      try {
        results = await this.store.append(messages, this.now());
      } catch (err) {
        for (const done of dones) done(err);
        continue;
      }
      for (let i = 0; i < dones.length; i++) dones[i](undefined, results[i]);
      this.onCommitted(messages, results);
    }
    this.flushing = false;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
