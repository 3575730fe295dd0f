import type { AppendResult, NewMessage, Store } from "../store/store.js";

interface Pending {
  message: NewMessage;
  resolve: (result: AppendResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: SENDs that arrive while a commit is running (or within the
 * same tick) are written together in the next commit, so throughput does not
 * depend on one transaction per message. Each caller is answered only after
 * the commit holding its message succeeded.
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

  append(message: NewMessage): Promise<AppendResult> {
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0 && !this.flushing) {
        this.idle = new Promise((done) => {
          this.markIdle = done;
        });
      }
      this.queue.push({ message, resolve, reject });
      this.schedule();
    });
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
      try {
        const results = await this.store.append(messages, this.now());
        batch.forEach((p, i) => {
          p.resolve(results[i]);
        });
        this.onCommitted(messages, results);
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    this.flushing = false;
    this.markIdle();
  }
}
