import type { Mq9Client } from "@mq9/client";
import {
  A2AClient,
  A2AError,
  endsV03Stream,
  eventInfo,
  type JsonRpcResponse,
  ReplyInbox,
  RpcChannel,
  RpcErrorCode,
} from "@mq9/client/a2a";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { cardEtag, gatewayCard } from "./gateway-card.js";
import { type RememberedTask, TaskMemory } from "./task-memory.js";

/** Options of `mountA2AGateway`. */
export interface A2AGatewayOptions {
  /** The broker connection the gateway calls agents through (opened once, on first use). */
  client: () => Promise<Mq9Client>;
  /** URL prefix (default /a2a): agents live at `<prefix>/<name or mailbox>`. */
  prefix?: string;
  /** Public base URL written into cards (default: from the request's Host header). */
  publicUrl?: string;
  /** How long a call waits for the agent (default 300 000 ms). */
  timeoutMs?: number;
  /** Largest request body (default 1 MiB, the broker's default max payload). */
  maxBodyBytes?: number;
  /**
   * How often an idle event stream gets an SSE comment (default 10 000 ms), so clients with
   * a read timeout (Hermes' `a2a_call`: 30 s) do not give up on an agent that works long.
   */
  keepaliveMs?: number;
}

type Json = Record<string, unknown>;

interface Gateway {
  a2a: A2AClient;
  channel: RpcChannel;
}

const STREAMING = new Set(["SendStreamingMessage", "message/stream", "SubscribeToTask", "tasks/resubscribe"]);
const SENDS = new Set(["SendMessage", "message/send"]);
const STREAMED_SENDS = new Set(["SendStreamingMessage", "message/stream"]);

type Replies = AsyncGenerator<{ response: JsonRpcResponse }, void, undefined>;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function rpcError(id: unknown, code: number, message: string) {
  return { jsonrpc: "2.0", id: id ?? null, error: { code, message } };
}

/** A non-blocking send (v1 `returnImmediately`, v0.3 `blocking: false`) returns at the task's first event. */
function returnsImmediately(params: unknown): boolean {
  const configuration = (params as Json | undefined)?.configuration as Json | undefined;
  return configuration?.returnImmediately === true || configuration?.blocking === false;
}

/**
 * Mounts the A2A HTTP gateway on the broker's HTTP server: every registered A2A agent
 * gets a card at `/a2a/{agent}/.well-known/agent-card.json` (and the older `agent.json`)
 * and a JSON-RPC endpoint at `/a2a/{agent}` whose calls travel through its mailbox.
 * It uses only the client SDK, so it works in front of any mq9 broker.
 */
export async function mountA2AGateway(app: FastifyInstance, options: A2AGatewayOptions): Promise<void> {
  const prefix = options.prefix ?? "/a2a";
  const timeoutMs = options.timeoutMs ?? 300_000;
  const keepaliveMs = options.keepaliveMs ?? 10_000;
  const memory = new TaskMemory();
  let gateway: Promise<Gateway> | undefined;
  let inbox: ReplyInbox | undefined;
  const open = () => {
    gateway ??= options.client().then(
      (client) => {
        inbox = new ReplyInbox(client, { replyGroup: "a2a.gateway" });
        return { a2a: new A2AClient(client, { timeoutMs }), channel: new RpcChannel(client, inbox) };
      },
      (err) => {
        gateway = undefined;
        throw err;
      },
    );
    return gateway;
  };

  const baseUrl = (request: FastifyRequest, agent: string) =>
    `${options.publicUrl ?? `${request.protocol}://${request.headers.host}`}${prefix}/${encodeURIComponent(agent)}`;

  await app.register(
    async (scope) => {
      scope.addHook("onClose", async () => {
        await inbox?.close();
        const g = await gateway?.catch(() => undefined);
        await g?.a2a.close();
      });
      // Bodies are parsed here, so malformed JSON gets a JSON-RPC parse error, not fastify's 400.
      scope.addContentTypeParser(
        ["application/json", "application/a2a+json"],
        { parseAs: "string" },
        (_r, body, done) => done(null, body),
      );
      scope.setErrorHandler((error: { statusCode?: number; message: string }, _request, reply) => {
        if (error.statusCode === 413) {
          return reply
            .code(413)
            .send(
              rpcError(
                null,
                RpcErrorCode.invalidRequest,
                `request too large: the limit is ${options.maxBodyBytes ?? 1_048_576} bytes`,
              ),
            );
        }
        return reply.code(error.statusCode ?? 500).send(rpcError(null, RpcErrorCode.internal, error.message));
      });

      const card = async (request: FastifyRequest<{ Params: { agent: string } }>, reply: FastifyReply) => {
        const { a2a } = await open();
        try {
          const ref = await a2a.resolve(request.params.agent);
          const body = JSON.stringify(gatewayCard(ref.card, baseUrl(request, request.params.agent)));
          const etag = cardEtag(body);
          if (request.headers["if-none-match"] === etag) return reply.code(304).send();
          return reply
            .header("content-type", "application/json")
            .header("cache-control", "public, max-age=60")
            .header("etag", etag)
            .send(body);
        } catch (err) {
          return notFound(reply, err);
        }
      };
      scope.get("/:agent/.well-known/agent-card.json", card);
      scope.get("/:agent/.well-known/agent.json", card);

      scope.post<{ Params: { agent: string }; Body: string }>(
        "/:agent",
        { bodyLimit: options.maxBodyBytes ?? 1_048_576 },
        async (request, reply) => {
          let body: Json;
          try {
            const parsed: unknown = JSON.parse(request.body ?? "");
            if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
              throw new Error("not an object");
            body = parsed as Json;
          } catch (err) {
            return reply.send(
              rpcError(null, RpcErrorCode.parse, `Invalid JSON payload: ${(err as Error).message}`),
            );
          }
          const id = body.id ?? null;
          if (body.jsonrpc !== "2.0" || typeof body.method !== "string") {
            return reply.send(
              rpcError(
                id,
                RpcErrorCode.invalidRequest,
                'a JSON-RPC 2.0 request needs jsonrpc "2.0" and a method',
              ),
            );
          }
          const method = body.method;
          const { a2a, channel } = await open();
          let mailbox: string;
          try {
            mailbox = (await a2a.resolve(request.params.agent)).mailbox;
          } catch (err) {
            return notFound(reply, err, id);
          }
          const header = (name: string) => {
            const value = request.headers[name];
            return typeof value === "string" && value !== "" ? value : undefined;
          };
          const version =
            header("a2a-version") ??
            (request.query as Json)["A2A-Version"]?.toString() ??
            (method.includes("/") ? "0.3" : "1.0");
          const extensions = header("a2a-extensions") ?? header("x-a2a-extensions");
          const callOptions = {
            timeoutMs,
            version,
            headers: extensions ? { "a2a-extensions": extensions } : undefined,
          };
          const withId = (response: JsonRpcResponse) => ({ ...response, id });
          const v03 = version.split(".").slice(0, 2).join(".") === "0.3";
          const streaming = STREAMING.has(method);
          let params = body.params;
          let tracker: ReturnType<TaskMemory["track"]> | undefined;
          const message = isJson(params) && isJson(params.message) ? params.message : undefined;
          if ((SENDS.has(method) || STREAMED_SENDS.has(method)) && message && isJson(params)) {
            const messageId = typeof message.messageId === "string" ? message.messageId : undefined;
            const repeat = memory.repeatOf(mailbox, messageId);
            if (repeat) {
              const replies = repeatReplies(channel, mailbox, repeat, version === "0.3", callOptions);
              return answer(
                reply,
                replies,
                streaming,
                SENDS.has(method) && returnsImmediately(params),
                withId,
                request.params.agent,
                v03,
              );
            }
            const contextId = typeof message.contextId === "string" ? message.contextId : undefined;
            const continued = message.taskId ? undefined : memory.continuationOf(mailbox, contextId);
            if (continued) params = { ...params, message: { ...message, taskId: continued } };
            tracker = memory.track(mailbox, messageId);
          }
          const replies = observed(
            channel.call(mailbox, { jsonrpc: "2.0", method, params }, callOptions),
            tracker,
          );
          return answer(
            reply,
            replies,
            streaming,
            SENDS.has(method) && returnsImmediately(params),
            withId,
            request.params.agent,
            v03,
          );
        },
      );
    },
    { prefix },
  );

  /** Sends the agent's responses: as an event stream, or the last one (the first, for a non-blocking send). */
  async function answer(
    reply: FastifyReply,
    replies: Replies,
    streaming: boolean,
    immediate: boolean,
    withId: (response: JsonRpcResponse) => Json,
    agent: string,
    v03: boolean,
  ): Promise<FastifyReply> {
    const id = withId({ jsonrpc: "2.0", id: null }).id;
    try {
      if (streaming) return await stream(reply, replies, withId, keepaliveMs, v03);
      let last: JsonRpcResponse | undefined;
      for await (const r of replies) {
        last = r.response;
        if (immediate) break;
      }
      return reply.send(
        last ? withId(last) : rpcError(id, RpcErrorCode.internal, "the agent sent no response"),
      );
    } catch (err) {
      return reply.send(rpcError(id, RpcErrorCode.internal, failureText(err, agent)));
    }
  }
}

/** Passes the responses through, telling the task memory what each says. */
async function* observed(replies: Replies, tracker: ReturnType<TaskMemory["track"]> | undefined): Replies {
  try {
    for await (const r of replies) {
      tracker?.observe(r.response);
      yield r;
    }
  } finally {
    tracker?.done();
  }
}

/**
 * The answer to a send repeated with the same messageId: the task it started, as it is now
 * once it has ended or waits for input (or as it is when the call's time is up).
 */
async function* repeatReplies(
  channel: RpcChannel,
  mailbox: string,
  repeat: Promise<RememberedTask | undefined>,
  legacy: boolean,
  callOptions: { timeoutMs: number; version: string; headers?: Record<string, string> },
): Replies {
  let timer: NodeJS.Timeout | undefined;
  const task = await Promise.race([
    repeat,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), callOptions.timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  if (!task) {
    yield {
      response: rpcError(
        null,
        RpcErrorCode.internal,
        "a message with this messageId was sent already and the agent has not started its task yet: it stays queued in the agent's mailbox",
      ) as JsonRpcResponse,
    };
    return;
  }
  // Poll the task rather than subscribe: every mailbox agent answers GetTask, not all stream.
  const deadline = Date.now() + callOptions.timeoutMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 1_000)) {
    const current = await channel.request(
      mailbox,
      { jsonrpc: "2.0", method: legacy ? "tasks/get" : "GetTask", params: { id: task.taskId } },
      callOptions,
    );
    if (
      current.error ||
      TaskMemory.settled(eventInfo(current.result).state) ||
      Date.now() + pause > deadline
    ) {
      yield {
        response: current.error
          ? current
          : { ...current, result: legacy ? current.result : { task: current.result } },
      };
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Server-sent events, one JSON-RPC response per `data:` line, and an SSE comment whenever
 * the stream was idle for `keepaliveMs`. An error that comes before the first event and
 * within `keepaliveMs` is plain JSON; later, the stream has started and it is an event.
 * A v0.3 stream closes after its final status-update: agents of mq9 0.x releases send the
 * task after it, which v0.3 clients take for a second task; it is read and not passed on.
 */
async function stream(
  reply: FastifyReply,
  replies: Replies,
  withId: (response: JsonRpcResponse) => Json,
  keepaliveMs: number,
  v03: boolean,
): Promise<FastifyReply> {
  const pendingFirst = replies.next();
  let wait: NodeJS.Timeout | undefined;
  const early = await Promise.race([
    pendingFirst,
    new Promise<undefined>((resolve) => {
      wait = setTimeout(() => resolve(undefined), keepaliveMs);
    }),
  ]).finally(() => clearTimeout(wait));
  if (early && (early.done || early.value.response.error)) {
    await replies.return(undefined);
    return reply.send(
      early.done
        ? rpcError(null, RpcErrorCode.internal, "the agent sent no response")
        : withId(early.value.response),
    );
  }
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  let closed = false;
  raw.on("close", () => {
    closed = true;
  });
  let lastWrite = Date.now();
  const write = (text: string) => {
    if (closed || raw.writableEnded) return;
    raw.write(text);
    lastWrite = Date.now();
  };
  const keepalive = setInterval(
    () => {
      if (Date.now() - lastWrite >= keepaliveMs - 50) write(": keepalive\n\n");
    },
    Math.max(50, Math.floor(keepaliveMs / 2)),
  );
  const end = () => {
    clearInterval(keepalive);
    if (!raw.writableEnded) raw.end();
  };
  /** Writes one event; true when the stream is over after it. */
  const event = (response: JsonRpcResponse): boolean => {
    const info = v03 && !response.error ? eventInfo(response.result) : undefined;
    const over = info !== undefined && endsV03Stream(info);
    // The event a v0.3 stream closes after says so (older agents left it false at input-required).
    if (over) (info.body as Json).final = true;
    write(`data: ${JSON.stringify(withId(response))}\n\n`);
    return over;
  };
  try {
    if (!early) write(": keepalive\n\n");
    const first = early ?? (await pendingFirst);
    if (first.done) {
      write(
        `data: ${JSON.stringify(withId(rpcError(null, RpcErrorCode.internal, "the agent sent no response") as JsonRpcResponse))}\n\n`,
      );
    } else {
      let over = event(first.value.response);
      if (over) end();
      for await (const r of replies) {
        if (closed) break;
        // After the end the rest is still read, so that the call completes and its task is remembered.
        if (over) continue;
        over = event(r.response);
        if (over) end();
      }
    }
  } catch (err) {
    write(
      `data: ${JSON.stringify(withId({ jsonrpc: "2.0", id: null, error: { code: RpcErrorCode.internal, message: failureText(err, "agent") } }))}\n\n`,
    );
  } finally {
    end();
  }
  return reply;
}

function failureText(err: unknown, agent: string): string {
  if (err instanceof A2AError && err.code === "TIMEOUT") {
    return `${agent} did not answer in time; the request stays queued in its mailbox`;
  }
  return err instanceof Error ? err.message : String(err);
}

function notFound(reply: FastifyReply, err: unknown, id: unknown = null): FastifyReply {
  if (err instanceof A2AError && (err.code === "AGENT_NOT_FOUND" || err.code === "NOT_AN_A2A_AGENT")) {
    return reply.code(404).send(rpcError(id, RpcErrorCode.invalidRequest, err.message));
  }
  throw err;
}
