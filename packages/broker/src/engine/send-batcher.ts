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
    let committing = this.commitNext();
    while (committing) {
      const { messages, dones, results, err } = await committing;
      // A store that appends elsewhere gets what queued meanwhile before these callers are answered.
      if (this.store.capabilities.appendsElsewhere) committing = this.commitNext();
      if (err !== undefined) for (const done of dones) done(err);
      else if (results) {
        for (let i = 0; i < dones.length; i++) dones[i](undefined, results[i]);
        this.onCommitted(messages, results);
      }
      if (!this.store.capabilities.appendsElsewhere) committing = this.commitNext();
    }
    this.flushing = false;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Starts the commit of the queue (at most maxBatch of it); undefined when it is empty. */
  private commitNext():
    | Promise<{ messages: NewMessage[]; dones: AppendDone[]; results?: AppendResult[]; err?: unknown }>
    | undefined {
    if (this.messages.length === 0) return undefined;
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
    let appended: Promise<AppendResult[]>;
    try {
      appended = this.store.append(messages, this.now());
    } catch (err) {
      appended = Promise.reject(err);
    }
    return appended.then(
      (results) => ({ messages, dones, results }),
      (err: unknown) => ({ messages, dones, err: err ?? new Error("the store failed to append") }),
    );
  }
}
