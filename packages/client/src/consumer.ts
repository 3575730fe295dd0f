import { type DeliverPolicy, type FetchRequest, type MessageItem, Mq9Error } from "@mq9/protocol";
import { context } from "@opentelemetry/api";
import { DEFAULT_RETRY, pause, type RetryOptions, retryDelay } from "./backoff.js";
import { BatchAcker } from "./batch-acker.js";
import type { ConnectionWatcher } from "./connection-watcher.js";
import type { ClientLogger } from "./logger.js";
import { Mq9Message } from "./message.js";
import { fetchBody, type NakOptions } from "./request-bodies.js";
import { endSpan, startProcessSpan } from "./tracing.js";

/** How a consumed message is settled through its batch: one of these per FETCH reply, not per message. */
interface BatchSettlement {
  ack(index: number): Promise<void>;
  nak(index: number, options: NakOptions): Promise<{ deadLetter: boolean }>;
}

/** A message handed out by a consumer; `ack()` acknowledges it through the consumer's group. */
export class ConsumedMessage extends Mq9Message {
  constructor(
    item: MessageItem,
    /** The mailbox it came from. */
    readonly mailAddress: string,
    /** The consumer group, or undefined for a stateless consumer. */
    readonly group: string | undefined,
    private readonly batch: BatchSettlement | undefined,
    private readonly index: number,
  ) {
    super(item);
  }

  /**
   * Gives this message back now instead of letting its lease run out (an mq9 extension): it is
   * delivered again after `delayMs` (default: the group's backoff), or, `terminal`, moved to the
   * dead-letter mailbox. The consumer does this by itself when a handler throws.
   */
  nak(options: NakOptions = {}): Promise<{ deadLetter: boolean }> {
    return this.batch ? this.batch.nak(this.index, options) : Promise.reject(noGroup());
  }

  /**
   * Acknowledges this message; resolves once the broker confirmed an ACK that covers it
   * (it waits for earlier messages of the same batch, since an ACK covers those too).
   */
  ack(): Promise<void> {
    return this.batch ? this.batch.ack(this.index) : Promise.reject(noGroup());
  }
}

/**
 * Called once per message; a throw or rejection means "not handled": with a group the message is
 * NAKed with the error's text (delivered again after the group's backoff, or moved to dead letters
 * once its deliveries are used up); without one it is simply not ACKed. A handler that returns
 * without a promise is done when it returns: no promise is made for it, and the next batch may be
 * fetched while its batch runs (see docs/client.md).
 */
export type MessageHandler = (message: ConsumedMessage) => unknown;

/** Options of `Mq9Client.consume`. */
export interface ConsumeOptions {
  /** Consumer group; members of one group share the work. Omitted: a stateless reader with no ACKs. */
  group?: string;
  /** Where a new group starts (default latest: only messages sent from now on). */
  deliver?: DeliverPolicy;
  /** Unix seconds, with deliver "from_time". */
  fromTime?: number;
  /** First msg_id, with deliver "from_id". */
  fromId?: number;
  /** Messages per FETCH (default 10). */
  batch?: number;
  /** Handlers running at once (default 1; an async iterator always takes one at a time). */
  concurrency?: number;
  /**
   * FETCHes in flight at once (default 1; more needs a group and a handler). A FETCH waits for
   * the broker to store what was sent before it, so one at a time caps a busy consumer at
   * `batch` messages per FETCH latency; a second FETCH overlaps the first's wait.
   */
  fetches?: number;
  /** ACK after the handler returns (default true; needs a group). When false, call `message.ack()`. */
  autoAck?: boolean;
  /** Long-poll of each FETCH (default 2 000). */
  maxWaitMs?: number;
  /** Lease of fetched messages; an un-ACKed message comes back after it (broker default 30 000). */
  leaseMs?: number;
  /**
   * Deliveries of a message before the broker moves it to the mailbox's dead-letter mailbox (an
   * mq9 extension, remembered by the group; 0: no limit).
   */
  maxDeliver?: number;
  /** Wait before the n-th redelivery of a failed message (ms; the last step repeats; mq9 extension). */
  backoffMs?: readonly number[];
  /** This consumer's name, shown with the leases it holds (default: the connection's name). */
  member?: string;
  /**
   * NAK a message whose handler threw, with the error's text, so it comes back after `backoffMs`
   * (without it: 1 s, 5 s, then every 30 s) instead of after its whole lease (default true; needs a
   * group and a broker that knows NAK).
   */
  nakOnError?: boolean;
  /** false: leave out the raw header block of each message (see FetchOptions.headerBytes; default true). */
  headerBytes?: boolean;
  /** false: leave out the decoded header map of each message (see FetchOptions.headerMap; default true). */
  headerMap?: boolean;
  /** Payloads as bytes after the reply's JSON, not base64 (default; see FetchOptions.rawPayloads; mq9 extension). */
  rawPayloads?: boolean;
  /** Retries of FETCH and ACK while the connection is lost; the consumer stops when they run out. */
  retry?: RetryOptions;
  /** Handler failures and retried connection errors; default: one line on stderr. */
  onError?: (error: Error, message?: ConsumedMessage) => void;
}

/** How one FETCH is made, beside its body. */
export interface FetchCall {
  /** The long-poll the body asks for: the reply's timeout starts after it. */
  maxWaitMs: number;
  /** Abandons the FETCH (on stop); what it still brings goes to `lateItems`. */
  signal?: AbortSignal;
  lateItems?: (items: MessageItem[]) => void;
  /** Trace-context headers to send with it. */
  trace?: Record<string, string>;
  /** Published now even while other requests are in flight (see RequestMux's `atOnce`). */
  atOnce?: boolean;
}

/** What a consumer needs from the client: two requests and the connection's state. */
export interface ConsumerSource {
  readonly connection: ConnectionWatcher;
  /** One FETCH. */
  fetchItems(mailAddress: string, body: FetchRequest, call: FetchCall): Promise<MessageItem[]>;
  /** One ACK. */
  ack(mailAddress: string, group: string, msgId: number): Promise<void>;
  /** One NAK. */
  nak(
    mailAddress: string,
    group: string,
    msgId: number,
    options: NakOptions,
  ): Promise<{ deadLetter: boolean }>;
  /** Where failures go when the consumer has no `onError`. */
  readonly logger: ClientLogger;
}

/** A FETCH on its way, and when it was sent (its messages' leases began after that). */
interface PendingFetch {
  items: Promise<MessageItem[]>;
  startedAt: number;
}

/** Leaving a for-await loop (break, throw, return) rejects the held message with this; not reported. */
class LeftLoop extends Error {}

/** A broker that answers an empty FETCH at once (no long-poll) is asked again after this pause. */
const IDLE_PAUSE_MS = 100;
/** Bound on remembered handled-but-not-yet-ACKed msg_ids. */
const MAX_REMEMBERED = 10_000;
/**
 * Waits before a failed message comes back when the consumer sets no `backoffMs` (the n-th
 * failure waits the n-th step): a handler failing on a downstream that is down must not spin.
 */
export const DEFAULT_RETRY_DELAYS_MS = [1_000, 5_000, 30_000];

/** The protocol's default lease, assumed when the consumer does not set one. */
const DEFAULT_LEASE_MS = 30_000;
/** The NAK reason of messages a stopping consumer gives back unhandled. */
const GIVEN_BACK = "given back unhandled: the consumer stopped";

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * A long-poll FETCH loop over one mailbox: runs a handler per message with bounded
 * concurrency (or hands messages to a for-await loop), ACKs what was handled, retries
 * with backoff while the connection is lost, and stops cleanly.
 */
export class Consumer implements AsyncIterable<ConsumedMessage> {
  private readonly options: Required<
    Omit<
      ConsumeOptions,
      | "group"
      | "fromTime"
      | "fromId"
      | "leaseMs"
      | "retry"
      | "headerBytes"
      | "headerMap"
      | "rawPayloads"
      | "fetches"
      | "maxDeliver"
      | "backoffMs"
      | "member"
    >
  > &
    Pick<
      ConsumeOptions,
      | "group"
      | "fromTime"
      | "fromId"
      | "leaseMs"
      | "headerBytes"
      | "headerMap"
      | "rawPayloads"
      | "maxDeliver"
      | "backoffMs"
      | "member"
    > & {
      retry: Required<RetryOptions>;
    };
  private state: "idle" | "running" | "stopping" | "stopped" = "idle";
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();
  private readonly ackers = new Set<BatchAcker>();
  /** Outcome of each handled message until it is ACKed, so a redelivery does not run the handler twice. */
  private readonly handled = new Map<number, Promise<boolean> | true>();
  private freeSlots: number;
  private slotWaiters: (() => void)[] = [];
  private readonly finished = deferred<Error | undefined>();
  /** A stateless consumer's own position: the next msg_id it has not seen. */
  private cursor: number | undefined;
  private onStop: (() => void) | undefined;
  private iterated = false;
  private readonly fetches: number;

  constructor(
    private readonly source: ConsumerSource,
    /** The mailbox this consumer reads. */
    readonly mailAddress: string,
    options: ConsumeOptions,
    private readonly handler?: MessageHandler,
  ) {
    const batch = options.batch ?? 10;
    const concurrency = handler ? (options.concurrency ?? 1) : 1;
    if (!Number.isSafeInteger(batch) || batch < 1) throw badOption("batch", batch);
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw badOption("concurrency", concurrency);
    const fetches = options.fetches ?? 1;
    if (!Number.isSafeInteger(fetches) || fetches < 1) throw badOption("fetches", fetches);
    // Without a group two FETCHes would read the same messages (one cursor); an iterator takes one at a time.
    if (fetches > 1 && (!options.group || !handler)) {
      throw misuse("consume option fetches above 1 needs a group and a handler");
    }
    this.fetches = fetches;
    this.options = {
      group: options.group || undefined,
      deliver: options.deliver ?? "latest",
      fromTime: options.fromTime,
      fromId: options.fromId,
      batch,
      concurrency,
      autoAck: options.autoAck ?? true,
      maxWaitMs: options.maxWaitMs ?? 2_000,
      leaseMs: options.leaseMs,
      headerBytes: options.headerBytes,
      headerMap: options.headerMap,
      rawPayloads: options.rawPayloads,
      maxDeliver: options.maxDeliver,
      backoffMs: options.backoffMs,
      member: options.member,
      nakOnError: options.nakOnError ?? true,
      retry: { ...DEFAULT_RETRY, ...options.retry },
      onError:
        options.onError ??
        ((error) => source.logger.warn(`mq9 consumer of ${mailAddress}: ${error.message}`)),
    };
    this.freeSlots = concurrency;
    if (handler) this.begin(handler);
  }

  /** Stops fetching, lets running handlers finish, sends their ACKs, then resolves. */
  async stop(): Promise<void> {
    if (this.state === "idle") {
      this.state = "stopped";
      this.finished.resolve(undefined);
    } else if (this.state === "running") {
      this.state = "stopping";
      this.abort.abort();
      this.onStop?.();
      this.wakeSlotWaiters();
    }
    await this.finished.promise;
  }

  /** Resolves once the consumer has stopped: with the error that ended it, or undefined after `stop()`. */
  closed(): Promise<Error | undefined> {
    return this.finished.promise;
  }

  /**
   * Messages one at a time. A message is ACKed (with autoAck) when the loop asks for
   * the next one; leaving the loop leaves the current one un-ACKed, so it comes back
   * after its lease — call `message.ack()` first if you did handle it.
   */
  [Symbol.asyncIterator](): AsyncIterator<ConsumedMessage> {
    if (this.handler) throw misuse("this consumer runs a handler; use consume(mailbox, options) to iterate");
    if (this.iterated) throw misuse("a consumer can be iterated only once");
    this.iterated = true;
    let held: { resolve(): void; reject(err: Error): void } | undefined;
    let waiting:
      | { resolve(result: IteratorResult<ConsumedMessage>): void; reject(err: Error): void }
      | undefined;
    /** A message handed over while nobody was waiting in next(). */
    let ready: ConsumedMessage | undefined;
    let ended = false;
    let endError: Error | undefined;
    const release = (outcome: "handled" | "left") => {
      const current = held;
      held = undefined;
      if (outcome === "handled") current?.resolve();
      else current?.reject(new LeftLoop());
    };
    this.onStop = () => release("left");
    const handOver: MessageHandler = (message) =>
      new Promise<void>((resolve, reject) => {
        held = { resolve, reject };
        const next = waiting;
        waiting = undefined;
        if (next) next.resolve({ value: message, done: false });
        else ready = message;
      });
    void this.finished.promise.then((err) => {
      ended = true;
      endError = err;
      const next = waiting;
      waiting = undefined;
      if (err) next?.reject(err);
      else next?.resolve({ value: undefined, done: true });
    });
    return {
      next: () => {
        if (ready) {
          const message = ready;
          ready = undefined;
          return Promise.resolve({ value: message, done: false });
        }
        release("handled");
        if (ended) {
          return endError ? Promise.reject(endError) : Promise.resolve({ value: undefined, done: true });
        }
        const result = new Promise<IteratorResult<ConsumedMessage>>((resolve, reject) => {
          waiting = { resolve, reject };
        });
        if (this.state === "idle") this.begin(handOver);
        return result;
      },
      return: async () => {
        release("left");
        await this.stop();
        return { value: undefined, done: true };
      },
    };
  }

  private begin(handler: MessageHandler): void {
    this.state = "running";
    void this.run(handler).then((failure) => {
      this.state = "stopped";
      this.finished.resolve(failure);
    });
  }

  private async run(handler: MessageHandler): Promise<Error | undefined> {
    let failure: Error | undefined;
    const fetchLoop = async () => {
      /** The next batch's FETCH, sent as the current batch arrived (see `fetchAhead`). */
      let ahead: PendingFetch | undefined;
      let mayFetchAhead = false;
      try {
        while (this.state === "running") {
          let call = ahead;
          ahead = undefined;
          if (!call) {
            // Fetch only when a handler could start, so fetched messages do not sit out their lease.
            if (!(await this.acquireSlot())) break;
            this.releaseSlot();
            call = this.startFetch();
          }
          const items = await call.items;
          // Messages that arrive while stopping go back to the group at once.
          if (this.state !== "running") {
            this.returnUnhandled(items);
            break;
          }
          if (items.length === 0) continue;
          if (mayFetchAhead) {
            ahead = this.startFetch(true);
            // nats.js writes what was published when this run of microtasks ends: let the FETCH
            // leave now, or it would wait for the batch's handlers and overlap nothing.
            await undefined;
          }
          const dispatchedAt = performance.now();
          await this.dispatch(items, handler, call.startedAt);
          mayFetchAhead = this.fetchAhead(dispatchedAt);
        }
      } catch (err) {
        failure ??= err instanceof Error ? err : new Error(String(err));
        if (this.state === "running") {
          this.state = "stopping";
          this.onStop?.();
          // The other loops may be waiting in a long-poll or for a slot: they end now too.
          if (this.fetches > 1) {
            this.abort.abort();
            this.wakeSlotWaiters();
          }
        }
      }
      if (ahead) {
        // No handler will see what it brings: it goes back to the group at once.
        this.abort.abort();
        void ahead.items.then(this.returnUnhandled, () => {});
      }
    };
    // Each loop claims its own batches from the group, so their FETCHes never share a message.
    await Promise.all(Array.from({ length: this.fetches }, fetchLoop));
    while (this.running.size > 0) await Promise.all(this.running);
    for (const acker of this.ackers) await acker.idle();
    const reason = new Mq9Error(
      "NOT_CONNECTED",
      "not acknowledged before the consumer stopped; the message comes back after its lease",
    );
    for (const acker of this.ackers) acker.abandon(reason);
    return failure;
  }

  /** Sends one FETCH; a failure is thrown where its items are awaited. */
  private startFetch(ahead = false): PendingFetch {
    const startedAt = performance.now();
    const items = this.fetchBatch(ahead);
    // Awaited later (after a batch's handlers), so a failure must not count as unhandled meanwhile.
    items.catch(() => {});
    return { items, startedAt };
  }

  /**
   * Whether the next FETCH may go out as soon as a batch arrives, before its handlers run, so
   * the broker prepares it while they do: only while every handler of the batch just dispatched
   * was done when that dispatch returned (handlers that return without a promise), within a
   * quarter of the lease. The batch fetched ahead then waits about as long as that one took,
   * well inside its lease. A single FETCH loop only: `fetches` above 1 overlaps FETCHes already.
   */
  private fetchAhead(dispatchedAt: number): boolean {
    const leaseMs = this.options.leaseMs ?? DEFAULT_LEASE_MS;
    return (
      this.fetches === 1 &&
      this.state === "running" &&
      this.running.size === 0 &&
      performance.now() - dispatchedAt < leaseMs / 4
    );
  }

  private async dispatch(items: MessageItem[], handler: MessageHandler, fetchedAt: number): Promise<void> {
    const group = this.options.group;
    // The lease began after the FETCH was sent, so this deadline errs on the early side.
    const leaseEnds = fetchedAt + (this.options.leaseMs ?? DEFAULT_LEASE_MS);
    let acker: BatchAcker | undefined;
    let settlement: BatchSettlement | undefined;
    if (group) {
      const batchAcker = new BatchAcker(
        items.map((item) => item.msg_id),
        (msgId) => this.ackWithRetry(group, msgId, leaseEnds),
        (msgIds) => {
          for (const msgId of msgIds) this.handled.delete(msgId);
        },
        () => this.ackers.delete(batchAcker),
      );
      acker = batchAcker;
      settlement = {
        ack: (index) => batchAcker.done(index),
        nak: (index, options) => this.giveBack(batchAcker, index, items[index].msg_id, options),
      };
      this.ackers.add(batchAcker);
    }
    const autoAck = acker !== undefined && this.options.autoAck;
    for (let index = 0; index < items.length; index++) {
      const message = new ConsumedMessage(items[index], this.mailAddress, group, settlement, index);
      const earlier = autoAck ? this.handled.get(message.msgId) : undefined;
      if (earlier !== undefined) {
        // Delivered again (its lease ran out before our ACK got through): ACK it, do not handle it twice.
        const again = acker as BatchAcker;
        if (earlier === true) again.handledAt(index);
        else
          void earlier.then((ok) => {
            if (ok) again.handledAt(index);
          });
        continue;
      }
      // A free slot is taken without an await, so a batch's handlers start in one turn and
      // what they publish leaves in one socket write (nats.js writes once per microtask run).
      // Stopping: the rest of this batch stays un-ACKed and comes back after its lease.
      if (!this.takeFreeSlot() && !(await this.acquireSlot())) return;
      this.startHandler(handler, message, autoAck ? acker : undefined, index);
    }
  }

  /**
   * Runs the handler on one message in the slot the caller took. A handler that returns without
   * a promise (or throws at once) is done when it returns: its message is marked for the batch's
   * ACK and its slot freed in this same call, with no promise made for it.
   */
  private startHandler(
    handler: MessageHandler,
    message: ConsumedMessage,
    acker: BatchAcker | undefined,
    index: number,
  ): void {
    const traced = startProcessSpan(this.mailAddress, message.group, message.msgId, message);
    let returned: unknown;
    try {
      returned = traced ? context.with(traced.context, handler, undefined, message) : handler(message);
    } catch (err) {
      this.runTask(this.afterFailure(err, traced, message, acker, index));
      return;
    }
    if (!isThenable(returned)) {
      if (traced) endSpan(traced.span);
      if (acker) {
        this.remember(message.msgId, true);
        acker.handledAt(index);
      }
      this.releaseSlot();
      return;
    }
    /** Why the handler failed, for its NAK; undefined when it succeeded or a for-await loop was left. */
    let failure: unknown;
    const outcome = Promise.resolve(returned).then(
      () => {
        if (traced) endSpan(traced.span);
        return true;
      },
      (err: unknown) => {
        failure = err;
        return false;
      },
    );
    if (acker) this.remember(message.msgId, outcome);
    this.runTask(
      outcome.then((ok) => {
        if (!ok) return this.afterFailure(failure, traced, message, acker, index);
        acker?.handledAt(index);
      }),
    );
  }

  /**
   * What follows a handler's throw or rejection: report it, and with a group forget the
   * message's outcome and NAK it with the error's text (unless it was a for-await loop left).
   */
  private async afterFailure(
    err: unknown,
    traced: ReturnType<typeof startProcessSpan>,
    message: ConsumedMessage,
    acker: BatchAcker | undefined,
    index: number,
  ): Promise<void> {
    const left = err instanceof LeftLoop;
    if (traced) endSpan(traced.span, left ? undefined : err);
    let reason: string | undefined;
    if (!left) {
      const error = toError(err);
      this.options.onError(error, message);
      reason = error.message.slice(0, 1024) || error.name;
    }
    if (!acker) return;
    this.handled.delete(message.msgId);
    if (reason !== undefined && this.options.nakOnError) {
      await this.nakFailed(acker, index, message, reason);
    }
  }

  /** Tracks a handler still running (stop() waits for it); its slot is freed when it ends. */
  private runTask(work: Promise<void>): void {
    const task: Promise<void> = work.then(
      () => this.endTask(task),
      () => this.endTask(task),
    );
    this.running.add(task);
  }

  private endTask(task: Promise<void>): void {
    this.running.delete(task);
    this.releaseSlot();
  }

  /**
   * NAKs a message whose handler threw, with the error's text: it comes back after the group's
   * backoff (or goes to dead letters) instead of after its lease. A broker without NAK answers
   * an error; the message then comes back after its lease as before.
   */
  private async nakFailed(
    acker: BatchAcker,
    index: number,
    message: ConsumedMessage,
    reason: string,
  ): Promise<void> {
    // With backoffMs the group's own steps apply (the broker knows them); else the default ones.
    const count = message.deliveryCount ?? 1;
    const delayMs = this.options.backoffMs
      ? undefined
      : DEFAULT_RETRY_DELAYS_MS[Math.min(count, DEFAULT_RETRY_DELAYS_MS.length) - 1];
    await this.giveBack(acker, index, message.msgId, { reason, delayMs }).catch(() => {});
  }

  /** One NAK of a message of `acker`'s batch; once it is done, the batch's ACK passes over it. */
  private async giveBack(
    acker: BatchAcker,
    index: number,
    msgId: number,
    options: NakOptions,
  ): Promise<{ deadLetter: boolean }> {
    const group = this.options.group as string;
    const result = await this.source.nak(this.mailAddress, group, msgId, options);
    acker.gaveBack(index);
    return result;
  }

  private remember(msgId: number, outcome: Promise<boolean> | true): void {
    this.handled.set(msgId, outcome);
    if (this.handled.size > MAX_REMEMBERED) {
      const oldest = this.handled.keys().next().value;
      if (oldest !== undefined) this.handled.delete(oldest);
    }
  }

  private fetchRequest(): FetchRequest {
    const o = this.options;
    const position =
      this.cursor === undefined
        ? { deliver: o.deliver, fromTime: o.fromTime, fromId: o.fromId }
        : { deliver: "from_id" as const, fromId: this.cursor };
    return fetchBody({
      group: o.group,
      batch: o.batch,
      maxWaitMs: o.maxWaitMs,
      leaseMs: o.leaseMs,
      headerBytes: o.headerBytes,
      headerMap: o.headerMap,
      rawPayloads: o.rawPayloads,
      maxDeliver: o.maxDeliver,
      backoffMs: o.backoffMs,
      member: o.member,
      ...position,
    });
  }

  /** One FETCH with retries; `ahead`: fetched ahead of its handlers, so it goes out at once. */
  private async fetchBatch(ahead = false): Promise<MessageItem[]> {
    const { maxWaitMs, retry } = this.options;
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      try {
        const items = await this.source.fetchItems(this.mailAddress, this.fetchRequest(), {
          maxWaitMs,
          signal: this.abort.signal,
          lateItems: this.returnUnhandled,
          atOnce: ahead,
        });
        if (!this.options.group && items.length > 0) {
          this.cursor = Math.max(...items.map((item) => item.msg_id)) + 1;
        }
        if (items.length === 0 && performance.now() - started < maxWaitMs / 2) {
          await pause(IDLE_PAUSE_MS, { signal: this.abort.signal });
        }
        return items;
      } catch (err) {
        if (this.state !== "running") return [];
        if (!(err instanceof Mq9Error) || !err.retryable || attempt + 1 >= retry.attempts) throw err;
        this.options.onError(err);
        await pause(retryDelay(attempt, retry), {
          signal: this.abort.signal,
          wake: this.source.connection.changed(),
        });
      }
    }
  }

  /**
   * Gives a group's messages no handler will see back now (a NAK without delay), instead of
   * leaving them leased to a stopped consumer until the lease ends: a long-poll FETCH still
   * waiting at stop() claims what arrives later.
   */
  private readonly returnUnhandled = (items: readonly MessageItem[]): void => {
    const group = this.options.group;
    if (!group) return;
    for (const item of items) {
      this.source.nak(this.mailAddress, group, item.msg_id, { delayMs: 0, reason: GIVEN_BACK }).catch(() => {
        // The lease brings it back instead.
      });
    }
  };

  private async ackWithRetry(group: string, msgId: number, leaseEnds: number): Promise<void> {
    const { retry } = this.options;
    for (let attempt = 0; ; attempt++) {
      // Once the lease is over the batch may have been handed out again, and a late ACK would
      // also cover the messages before it in that new batch; the redelivery gets ACKed instead.
      if (performance.now() >= leaseEnds) {
        const late = new Mq9Error(
          "TIMEOUT",
          `msg_id ${msgId} was handled after its lease ended; not ACKed, it will be delivered again (raise leaseMs)`,
        );
        this.options.onError(late);
        throw late;
      }
      try {
        await this.source.ack(this.mailAddress, group, msgId);
        return;
      } catch (err) {
        const error = toError(err);
        // After stop() one attempt is all we make: stop must not hang on a dead connection.
        const again =
          error instanceof Mq9Error &&
          error.retryable &&
          attempt + 1 < retry.attempts &&
          this.state === "running";
        if (!again) {
          this.options.onError(error);
          throw error;
        }
        await pause(retryDelay(attempt, retry), {
          signal: this.abort.signal,
          wake: this.source.connection.changed(),
        });
      }
    }
  }

  /** Takes a slot if one is free now (the synchronous path of acquireSlot). */
  private takeFreeSlot(): boolean {
    if (this.state !== "running" || this.freeSlots <= 0) return false;
    this.freeSlots--;
    return true;
  }

  private async acquireSlot(): Promise<boolean> {
    for (;;) {
      if (this.state !== "running") return false;
      if (this.takeFreeSlot()) return true;
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
  }

  private releaseSlot(): void {
    this.freeSlots++;
    this.slotWaiters.shift()?.();
  }

  private wakeSlotWaiters(): void {
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const wake of waiters) wake();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function badOption(name: string, value: unknown): Mq9Error {
  return new Mq9Error("INVALID_REQUEST", `consume option ${name} must be a positive integer, got ${value}`, {
    retryable: false,
  });
}

function misuse(why: string): Mq9Error {
  return new Mq9Error("INVALID_REQUEST", why, { retryable: false });
}

function noGroup(): Mq9Error {
  return new Mq9Error("INVALID_REQUEST", "ack() needs a consumer group; pass { group } to consume()", {
    retryable: false,
  });
}
