import type { AppendResult, NewMessage, Store } from "../store/store.js";

const RESOLVED = Promise.resolve();

/** Told once the commit holding a message is done: its result, or why the commit failed. */
export type AppendDone = (err: unknown, result?: AppendResult) => void;

/**
 * Group commit: SENDs that arrive while a commit is running (or within the
 * same tick) are written together in the next commit, so throughput does not
 * depend on one transaction per message. Each caller is answered only after
 * the commit holding its message succeeded. Callers pass a callback, not await a promise:
 * SEND is the hottest path, and a promise per message was a measurable part of its cost.
 *
 * A store that appends elsewhere (a database server shared by several brokers) costs a round
 * trip and a commit per batch, and a broker commits one batch at a time. Under concurrent load
 * the next commit waits for the callers the last one answers to send again (as many more
 * messages as it held), at most as long as the last commit took (and `lingerMs`). Otherwise the
 * callers split into two halves, one committing while the other waits in the queue: batches of
 * half the requests in flight, twice the commits, and each broker of a cluster, holding only its
 * share of the requests, pays per batch what one broker pays per bigger one. A caller alone
 * (batches of one) never waits.
 */
export class SendBatcher {
  /** Queued messages and, at the same index, whom to tell once each is committed. */
  private messages: NewMessage[] = [];
  private dones: AppendDone[] = [];
  private flushing = false;
  private scheduled = false;
  /** Callers of drained() waiting for the queue to empty. */
  private drainWaiters: (() => void)[] = [];
  /** While the next commit waits for more: the size that ends the wait, and how to end it. */
  private lingering?: { enough: number; go: () => void };
  /** How long the last commit took (ms): the next one waits no longer for more. */
  private lastCommitMs = 0;

  constructor(
    private readonly store: Store,
    private readonly onCommitted: (batch: readonly NewMessage[], results: AppendResult[]) => void,
    private readonly now: () => number = Date.now,
    private readonly maxBatch = 4096,
    private readonly lingerMs = store.capabilities.appendsElsewhere ? 20 : 0,
  ) {}

  append(message: NewMessage, done: AppendDone): void {
    this.messages.push(message);
    this.dones.push(done);
    if (this.lingering && this.messages.length >= this.lingering.enough) this.lingering.go();
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
    // A resolved promise's reaction, not queueMicrotask: Node wraps each queueMicrotask callback
    // in an AsyncResource of its own, an allocation and a scope per SEND batch.
    RESOLVED.then(this.flushScheduled);
  }

  private readonly flushScheduled = (): void => {
    this.scheduled = false;
    void this.flush();
  };

  private async flush(): Promise<void> {
    this.flushing = true;
    let committing = this.commitNext();
    while (committing) {
      const { messages, dones, results, err } = await committing;
      // A store that appends elsewhere gets what queued meanwhile before these callers are answered.
      if (this.store.capabilities.appendsElsewhere) committing = this.commitSoon(messages.length);
      if (err !== undefined) for (const done of dones) done(err);
      else if (results) {
        // Wake-ups first: a cluster node's announcement then leaves in the same write as the replies.
        this.onCommitted(messages, results);
        for (let i = 0; i < dones.length; i++) dones[i](undefined, results[i]);
      }
      if (!this.store.capabilities.appendsElsewhere) committing = this.commitNext();
    }
    this.flushing = false;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * The next commit: once `last` (the size of the batch about to be answered) more messages wait
   * than wait now, or the last commit's duration (at most lingerMs) passed.
   */
  private commitSoon(last: number): ReturnType<SendBatcher["commitNext"]> {
    if (this.lingerMs <= 0 || last < 2 || this.messages.length >= this.maxBatch) return this.commitNext();
    const enough = Math.min(this.maxBatch, this.messages.length + last);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => go(), Math.min(this.lingerMs, this.lastCommitMs));
      const go = () => {
        clearTimeout(timer);
        this.lingering = undefined;
        resolve();
      };
      this.lingering = { enough, go };
    }).then(() => this.commitNext() ?? { messages: [], dones: [], results: [] });
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
    const started = performance.now();
    try {
      appended = this.store.append(messages, this.now());
    } catch (err) {
      appended = Promise.reject(err);
    }
    // One reaction for either outcome: a lone SEND waits for no more promise hops than it must.
    return appended.then(
      (results) => {
        this.lastCommitMs = performance.now() - started;
        return { messages, dones, results };
      },
      (err: unknown) => {
        this.lastCommitMs = performance.now() - started;
        return { messages, dones, err: err ?? new Error("the store failed to append") };
      },
    );
  }
}
