import type { Priority } from "@mq9/protocol";
import type { Mq9Client } from "../client.js";
import { A2AError } from "./a2a-error.js";
import { A2AHeaders } from "./binding.js";
import type { Reply, ReplyInbox } from "./reply-inbox.js";
import type { JsonRpcRequest, JsonRpcResponse } from "./wire.js";

/** Options of one JSON-RPC call over a mailbox. */
export interface RpcCallOptions {
  /** Give up waiting after this long (the request stays in the agent's mailbox). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** `A2A-Version` of the request (default 1.0). */
  version?: string;
  /** More headers, e.g. `a2a-extensions`. */
  headers?: Record<string, string>;
  /** Cancels jump the queue of a busy agent. */
  priority?: Priority;
}

/**
 * Sends JSON-RPC requests into agents' mailboxes and yields their responses from the
 * caller's reply mailbox, until the one marked last.
 */
export class RpcChannel {
  constructor(
    private readonly client: Mq9Client,
    readonly inbox: ReplyInbox,
  ) {}

  /** Sends `request` (its id is replaced by a fresh correlation id) and yields every response. */
  async *call(
    mailbox: string,
    request: Omit<JsonRpcRequest, "id">,
    options: RpcCallOptions,
  ): AsyncGenerator<Reply, void, undefined> {
    const requestId = crypto.randomUUID();
    const deadline = Date.now() + options.timeoutMs;
    const queue = this.inbox.expect(requestId);
    try {
      const replyTo = await this.inbox.address();
      await this.client.send(
        mailbox,
        { ...request, id: requestId },
        {
          priority: options.priority,
          headers: {
            ...options.headers,
            [A2AHeaders.replyTo]: replyTo,
            [A2AHeaders.requestId]: requestId,
            [A2AHeaders.method]: request.method,
            [A2AHeaders.version]: options.version ?? "1.0",
          },
        },
      );
      for (;;) {
        const reply = await queue.next(deadline, options.signal);
        yield reply;
        if (reply.last) return;
      }
    } catch (err) {
      if (err instanceof A2AError && err.code === "TIMEOUT") {
        throw new A2AError(
          "TIMEOUT",
          `${mailbox} did not finish ${request.method} within ${options.timeoutMs} ms; the request stays queued in its mailbox`,
          { cause: err },
        );
      }
      throw err;
    } finally {
      this.inbox.forget(requestId);
    }
  }

  /** One request, one response: the last one. */
  async request(
    mailbox: string,
    request: Omit<JsonRpcRequest, "id">,
    options: RpcCallOptions,
  ): Promise<JsonRpcResponse> {
    let last: JsonRpcResponse | undefined;
    for await (const reply of this.call(mailbox, request, options)) last = reply.response;
    if (!last) throw new A2AError("INVALID_RESPONSE", `${mailbox} sent no response to ${request.method}`);
    return last;
  }
}
