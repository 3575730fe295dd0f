import type { AppendResult, NewMessage, Store } from "../store/store.js";

/** Told once the commit holding a message is done: its result, or why the commit failed. */
export type AppendDone = (err: unknown, result?: AppendResult) => void;

interface Pending {
  message: NewMessage;
  done: AppendDone;
}

/**
 * Group commit: SENDs that arrive while a commit is running (or within the
 * same tick) are written together in the next commit, so throughput does not
 * depend on one transaction per message. Each caller is answered only after
 * the commit holding its message succeeded. Callers pass a callback, not await a promise:
 * SEND is the hottest path, and a promise per message was a measurable part of its cost.
 */
export class SendBatcher {
  private queue: Pending[] = [];
  private flushing = false;
  private scheduled = false;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => {};

  constructor(
    private readonly store: Store,
    private readonly onCommitted: (batch: readonly NewMessage[], results: AppendResult[]) => void,
    private readonly now: () => number = Date.now,
    private readonly maxBatch = 4096,
  ) {}

  append(message: NewMessage, done: AppendDone): void {
    if (this.queue.length === 0 && !this.flushing) {
      this.idle = new Promise((resolve) => {
        this.markIdle = resolve;
      });
    }
    this.queue.push({ message, done });
    this.schedule();
  }

  /** Resolves once everything queued so far is committed (or failed). */
  drained(): Promise<void> {
    return this.queue.length === 0 && !this.flushing ? Promise.resolve() : this.idle;
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
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const messages = batch.map((p) => p.message);
      let results: AppendResult[];
      try {
        results = await this.store.append(messages, this.now());
      } catch (err) {
        for (const p of batch) p.done(err);
        continue;
      }
      for (let i = 0; i < batch.length; i++) batch[i].done(undefined, results[i]);
      this.onCommitted(messages, results);
    }
    this.flushing = false;
    this.markIdle();
  }
}
