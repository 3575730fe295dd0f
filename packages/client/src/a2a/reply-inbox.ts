import type { Mq9Client } from "../client.js";
import type { ConsumedMessage, Consumer } from "../consumer.js";
import { A2AError } from "./a2a-error.js";
import { A2AHeaders } from "./binding.js";
import { releaseLongPolls } from "./release-long-polls.js";
import { eventInfo, isObject, type JsonRpcResponse } from "./wire.js";

/** One response an agent put into the reply mailbox. */
export interface Reply {
  response: JsonRpcResponse;
  /** The correlation id (`mq9-a2a-request-id`). */
  requestId: string;
  /** Marked `mq9-a2a-last`: nothing more comes for this request. */
  last: boolean;
  taskId?: string;
}

/** Options of a caller's reply mailbox. */
export interface ReplyInboxOptions {
  /**
   * A fixed name for the reply mailbox. Replies that arrive while the caller is away wait
   * there, and a caller restarted with the same name picks them up (`waitForTask`).
   * Default: a broker-named mailbox, replaced by a fresh one before it expires.
   */
  replyMailbox?: string;
  /** Seconds the reply mailbox lives (default 3 600; a named one that already exists keeps its own). */
  replyTtlSeconds?: number;
  /** @deprecated The old name of `replyTtlSeconds`; still read when `replyTtlSeconds` is not given. */
  replyTtl?: number;
  /** Consumer group on the reply mailbox (default `a2a.caller`). */
  replyGroup?: string;
}

const DEFAULT_TTL = 3_600;
/** Replies nobody waited for, kept for `waitForTask` (the newest per task, bounded). */
const MAX_UNCLAIMED = 1_000;

/** Replies for one request, in order; `next` waits for the next one. */
class ReplyQueue {
  private readonly items: Reply[] = [];
  private wake: (() => void) | undefined;
  private failure: Error | undefined;

  push(reply: Reply): void {
    this.items.push(reply);
    this.wake?.();
  }

  fail(error: Error): void {
    this.failure = error;
    this.wake?.();
  }

  async next(deadline: number, signal?: AbortSignal): Promise<Reply> {
    for (;;) {
      const item = this.items.shift();
      if (item) return item;
      if (this.failure) throw this.failure;
      signal?.throwIfAborted();
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new A2AError("TIMEOUT", "no reply from the agent in time");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, remaining);
        const onAbort = () => done();
        signal?.addEventListener("abort", onAbort, { once: true });
        function done() {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
    }
  }
}

interface Box {
  address: string;
  /** Epoch ms after which a fresh mailbox is made for new requests; Infinity for a named one. */
  renewAt: number;
  consumer: Consumer;
}

/**
 * The caller's reply mailbox: created on first use (and renewed before it expires),
 * consumed in a group, each reply handed to the request waiting for it. Replies that
 * nobody waits for (the caller timed out, or was restarted) are kept per task.
 */
export class ReplyInbox {
  private box: Box | undefined;
  private opening: Promise<Box> | undefined;
  private readonly retired: Consumer[] = [];
  private readonly waiting = new Map<string, ReplyQueue>();
  private readonly unclaimed = new Map<string, Reply>();
  private readonly taskWaiters = new Map<string, Set<(reply: Reply) => void>>();
  private closed = false;
  private readonly group: string;

  constructor(
    private readonly client: Mq9Client,
    private readonly options: ReplyInboxOptions = {},
  ) {
    this.group = options.replyGroup ?? "a2a.caller";
  }

  /** The mail address replies go to, creating (or renewing) the mailbox when needed. */
  async address(): Promise<string> {
    if (this.closed) throw new A2AError("CLOSED", "the A2A client is closed");
    if (this.box && Date.now() < this.box.renewAt) return this.box.address;
    this.opening ??= this.open().finally(() => {
      this.opening = undefined;
    });
    return (await this.opening).address;
  }

  /** Starts collecting replies for a request id; call before sending the request. */
  expect(requestId: string): ReplyQueue {
    const queue = new ReplyQueue();
    this.waiting.set(requestId, queue);
    return queue;
  }

  /** Stops collecting replies for a request id; later ones count as unclaimed. */
  forget(requestId: string): void {
    this.waiting.delete(requestId);
  }

  /** Resolves with the last reply about a task that nobody was waiting for, now or when it arrives. */
  waitForTask(taskId: string, timeoutMs: number, signal?: AbortSignal): Promise<Reply> {
    const ready = this.unclaimed.get(taskId);
    if (ready) {
      this.unclaimed.delete(taskId);
      return Promise.resolve(ready);
    }
    void this.address();
    return new Promise<Reply>((resolve, reject) => {
      const waiters = this.taskWaiters.get(taskId) ?? new Set();
      this.taskWaiters.set(taskId, waiters);
      const finish = (error?: Error, reply?: Reply) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        waiters.delete(deliver);
        if (waiters.size === 0) this.taskWaiters.delete(taskId);
        if (error) reject(error);
        else resolve(reply!);
      };
      const deliver = (reply: Reply) => finish(undefined, reply);
      const onAbort = () => finish(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      const timer = setTimeout(
        () => finish(new A2AError("TIMEOUT", `no final result for task ${taskId} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      waiters.add(deliver);
    });
  }

  /** Stops the consumers; requests still waiting fail with CLOSED. */
  async close(): Promise<void> {
    this.closed = true;
    const error = new A2AError("CLOSED", "the A2A client was closed while waiting for a reply");
    for (const queue of this.waiting.values()) queue.fail(error);
    this.waiting.clear();
    const consumers = [...this.retired, ...(this.box ? [this.box.consumer] : [])];
    const address = this.box?.address;
    this.box = undefined;
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    if (address && this.client.isConnected) await releaseLongPolls(this.client, address);
  }

  private async open(): Promise<Box> {
    const named = this.options.replyMailbox;
    const ttl = this.options.replyTtlSeconds ?? this.options.replyTtl ?? DEFAULT_TTL;
    let address: string;
    if (named) {
      await this.client.ensureMailbox({ name: named, ttlSeconds: ttl, desc: "A2A replies" });
      address = named;
    } else {
      address = await this.client.createMailbox({ ttlSeconds: ttl, desc: "A2A replies" });
    }
    const consumer = this.client.consume(address, (message) => this.dispatch(message), {
      group: this.group,
      deliver: "earliest",
      batch: 32,
      onError: () => {},
    });
    // A generated mailbox is replaced halfway through its life; the old one is still read
    // until it expires, for requests that named it as their reply-to.
    const renewAt = named || ttl === 0 ? Number.POSITIVE_INFINITY : Date.now() + (ttl * 1000) / 2;
    if (this.box) this.retired.push(this.box.consumer);
    this.box = { address, renewAt, consumer };
    if (this.closed) await consumer.stop();
    return this.box;
  }

  private dispatch(message: ConsumedMessage): void {
    const headers = message.headers;
    const requestId = headers[A2AHeaders.requestId];
    if (requestId === undefined) return;
    let body: unknown;
    try {
      body = message.json();
    } catch {
      return;
    }
    // The Python SDK's agents answer with bare A2A objects instead of JSON-RPC envelopes.
    const response: JsonRpcResponse =
      isObject(body) && body.jsonrpc === "2.0"
        ? (body as unknown as JsonRpcResponse)
        : { jsonrpc: "2.0", id: requestId, result: body };
    const reply: Reply = {
      response,
      requestId,
      last: headers[A2AHeaders.last] === "true",
      taskId: headers[A2AHeaders.taskId] || eventInfo(response.result).taskId,
    };
    const queue = this.waiting.get(requestId);
    if (queue) {
      queue.push(reply);
      return;
    }
    if (!reply.last || !reply.taskId) return;
    const waiters = this.taskWaiters.get(reply.taskId);
    if (waiters && waiters.size > 0) {
      for (const deliver of [...waiters]) deliver(reply);
      return;
    }
    this.unclaimed.delete(reply.taskId);
    this.unclaimed.set(reply.taskId, reply);
    if (this.unclaimed.size > MAX_UNCLAIMED) {
      const oldest = this.unclaimed.keys().next().value;
      if (oldest !== undefined) this.unclaimed.delete(oldest);
    }
  }
}

export type { ReplyQueue };
