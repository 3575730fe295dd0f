import { Mq9Error } from "@mq9/protocol";
import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type NatsError,
  type Subscription,
} from "nats";
import type { ConnectionWatcher } from "./connection-watcher.js";
import { fromNatsError } from "./nats-errors.js";
import type { EncodedHeaders } from "./send-options.js";

export interface MuxRequestOptions {
  timeoutMs: number;
  headers?: EncodedHeaders;
  /** Abandons the request locally (the broker may still act on it). */
  signal?: AbortSignal;
  /**
   * With `signal`: a reply that comes after the abort, until the request's timeout, goes here
   * instead of nowhere (what a FETCH claimed after its consumer stopped can be given back).
   */
  lateReply?: (value: never) => void;
  /** A FETCH that may wait for messages: it does not count as traffic in flight. */
  longPoll?: boolean;
  /**
   * Published now even while others are in flight (see the class comment): for SEND, whose small
   * replies come many to a socket read, so the requests they set off share nats.js's write anyway,
   * and waiting for the end of the turn only delayed them.
   */
  atOnce?: boolean;
}

interface Pending {
  longPoll: boolean;
  /** What to publish; dropped once it went out. */
  outgoing?: { data: Uint8Array; headers?: EncodedHeaders };
  /** Turns the reply's payload into the result (throwing rejects the request). */
  decode(data: Uint8Array, subject: string): unknown;
  resolve(value: unknown): void;
  reject(err: Error): void;
  subject: string;
  deadline: number;
  timeoutMs: number;
  onAbort?: () => void;
  signal?: AbortSignal;
}

/** How often timeouts are checked; a request times out at most this late. */
const SWEEP_INTERVAL_MS = 50;

/**
 * Request/reply without nats.js's per-request cost: one wildcard reply subscription
 * (`<inbox>.*`) per connection, a Map from token to pending request, and one sweeping
 * timer for all timeouts. Requests fail at once when the connection drops.
 *
 * While other requests are in flight, new ones are published together at the end of the
 * event-loop turn (setImmediate), so they leave in one socket write: nats.js writes what one run
 * of microtasks published, so requests set off by replies that came in separate socket reads
 * (large ones, like DISCOVER's) would each cost a write of their own. A request made when nothing else (but long-polls) is waiting goes
 * out at once.
 */
export class RequestMux {
  private readonly prefix: string;
  private readonly pending = new Map<string, Pending>();
  /** Tokens of requests not yet published, in call order. */
  private queued: string[] = [];
  private publishScheduled = false;
  /** Pending requests other than long-polls. */
  private busy = 0;
  private readonly subscription: Subscription;
  private readonly sweeper: NodeJS.Timeout;
  private readonly unwatch: () => void;
  private nextToken = 0;
  private closedError: Mq9Error | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly connection: ConnectionWatcher,
  ) {
    // The connection's own inbox prefix, so a per-user prefix that nats-server permissions
    // confine (`_INBOX_alice.>`) holds for mq9 requests too.
    this.prefix = `${createInbox((nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix)}.`;
    this.subscription = nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => this.onReply(err, msg),
    });
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    this.unwatch = connection.on((event) => {
      if (event === "disconnect") {
        this.failAll(
          "NOT_CONNECTED",
          "the connection to the broker was lost; the request may or may not have been applied",
        );
      } else if (event === "close") this.close();
    });
  }

  /**
   * Publishes `data` to `subject` and resolves with `decode` of the reply's payload (and the
   * request's subject, for its errors); decoding here rather than in a `then` saves a promise per
   * request, and taking the subject lets a caller pass one function instead of a closure each time.
   */
  request<T>(
    subject: string,
    data: Uint8Array,
    options: MuxRequestOptions,
    decode: (reply: Uint8Array, subject: string) => T,
  ): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError);
    // Never publish while down: nats.js would buffer it and might apply it after we gave up.
    if (!this.connection.connected) {
      return Promise.reject(
        new Mq9Error("NOT_CONNECTED", `${subject}: not connected to the broker (reconnecting)`),
      );
    }
    if (options.signal?.aborted) return Promise.reject(abortError(subject));
    const token = (this.nextToken++).toString(36);
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = {
        longPoll: options.longPoll === true,
        decode,
        resolve: resolve as (value: unknown) => void,
        reject,
        subject,
        timeoutMs: options.timeoutMs,
        deadline: performance.now() + options.timeoutMs,
      };
      if (options.signal) {
        const signal = options.signal;
        entry.signal = signal;
        entry.onAbort = () => {
          if (!this.pending.has(token)) return;
          const lateReply = options.lateReply as ((value: unknown) => void) | undefined;
          if (lateReply) {
            // Still waited for until its timeout; a failure then has nobody to tell.
            entry.resolve = lateReply;
            entry.reject = () => {};
          } else this.settle(token, entry);
          reject(abortError(subject));
        };
        signal.addEventListener("abort", entry.onAbort, { once: true });
      }
      const alone = options.atOnce === true || this.busy === 0;
      if (!entry.longPoll) this.busy++;
      this.pending.set(token, entry);
      // Nothing waiting to go before it: out at once, without being queued.
      if (alone && this.queued.length === 0) {
        this.publish(token, entry, data, options.headers);
        return;
      }
      entry.outgoing = { data, headers: options.headers };
      this.queued.push(token);
      if (alone) this.publishQueued();
      else if (!this.publishScheduled) {
        this.publishScheduled = true;
        setImmediate(this.publishQueued);
      }
    });
  }

  private readonly publishQueued = (): void => {
    this.publishScheduled = false;
    const tokens = this.queued;
    this.queued = [];
    for (const token of tokens) {
      const entry = this.pending.get(token);
      // Timed out, abandoned or failed meanwhile: nothing to send.
      if (!entry?.outgoing) continue;
      const { data, headers } = entry.outgoing;
      entry.outgoing = undefined;
      if (!this.connection.connected) {
        this.settle(token, entry);
        entry.reject(
          new Mq9Error("NOT_CONNECTED", `${entry.subject}: not connected to the broker (reconnecting)`),
        );
        continue;
      }
      this.publish(token, entry, data, headers);
    }
  };

  private publish(
    token: string,
    entry: Pending,
    data: Uint8Array,
    headers: EncodedHeaders | undefined,
  ): void {
    try {
      // nats.js only calls encode() on the headers it publishes.
      this.nc.publish(entry.subject, data, {
        reply: this.prefix + token,
        headers: headers as unknown as MsgHdrs,
      });
    } catch (err) {
      this.settle(token, entry);
      entry.reject(fromNatsError(err, entry.subject));
    }
  }

  /** Number of requests waiting for a reply. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Fails what is pending and stops the timer; later requests fail with NOT_CONNECTED. */
  close(): void {
    if (this.closedError) return;
    this.failAll("NOT_CONNECTED", "the client is closed");
    this.closedError = new Mq9Error("NOT_CONNECTED", "the mq9 client is closed; connect again", {
      retryable: false,
    });
    clearInterval(this.sweeper);
    this.unwatch();
    if (!this.nc.isClosed()) this.subscription.unsubscribe();
  }

  private onReply(err: NatsError | null, msg: Msg): void {
    if (err) {
      this.failAll("NOT_CONNECTED", `the reply subscription failed: ${err.message}`);
      return;
    }
    const token = msg.subject.slice(this.prefix.length);
    const entry = this.pending.get(token);
    if (!entry) return; // timed out or abandoned: the late reply has nobody to go to
    this.settle(token, entry);
    // A status-only reply (503) is a NATS server saying nothing listens on the subject.
    if (msg.headers?.code === 503) {
      entry.reject(
        new Mq9Error("NOT_CONNECTED", `${entry.subject}: no mq9 broker is answering on this NATS server`),
      );
      return;
    }
    let value: unknown;
    try {
      value = entry.decode(msg.data, entry.subject);
    } catch (err) {
      entry.reject(err as Error);
      return;
    }
    entry.resolve(value);
  }

  private settle(token: string, entry: Pending): void {
    if (this.pending.delete(token) && !entry.longPoll) this.busy--;
    if (entry.onAbort) entry.signal?.removeEventListener("abort", entry.onAbort);
  }

  private sweep(): void {
    if (this.pending.size === 0) return;
    const now = performance.now();
    for (const [token, entry] of this.pending) {
      if (entry.deadline > now) continue;
      this.settle(token, entry);
      entry.reject(
        new Mq9Error(
          "TIMEOUT",
          `${entry.subject}: no reply within ${entry.timeoutMs} ms; is the broker overloaded or unreachable?`,
        ),
      );
    }
  }

  private failAll(code: "NOT_CONNECTED", why: string): void {
    for (const [token, entry] of this.pending) {
      this.settle(token, entry);
      entry.reject(new Mq9Error(code, `${entry.subject}: ${why}`));
    }
  }
}

function abortError(subject: string): Error {
  return new DOMException(`${subject}: request abandoned`, "AbortError");
}
