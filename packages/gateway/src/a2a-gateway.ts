import type { Mq9Client } from "@mq9/client";
import {
  A2AClient,
  A2AError,
  type JsonRpcResponse,
  ReplyInbox,
  RpcChannel,
  RpcErrorCode,
} from "@mq9/client/a2a";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { cardEtag, gatewayCard } from "./gateway-card.js";

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
}

type Json = Record<string, unknown>;

interface Gateway {
  a2a: A2AClient;
  channel: RpcChannel;
}

const STREAMING = new Set(["SendStreamingMessage", "message/stream", "SubscribeToTask", "tasks/resubscribe"]);
const SENDS = new Set(["SendMessage", "message/send"]);

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
          const replies = channel.call(
            mailbox,
            { jsonrpc: "2.0", method, params: body.params },
            { timeoutMs, version, headers: extensions ? { "a2a-extensions": extensions } : undefined },
          );
          const withId = (response: JsonRpcResponse) => ({ ...response, id });
          try {
            if (STREAMING.has(method)) return await stream(reply, replies, withId);
            const immediate = SENDS.has(method) && returnsImmediately(body.params);
            let last: JsonRpcResponse | undefined;
            for await (const r of replies) {
              last = r.response;
              if (immediate) break;
            }
            return reply.send(
              last ? withId(last) : rpcError(id, RpcErrorCode.internal, "the agent sent no response"),
            );
          } catch (err) {
            return reply.send(rpcError(id, RpcErrorCode.internal, failureText(err, request.params.agent)));
          }
        },
      );
    },
    { prefix },
  );
}

/** Server-sent events, one JSON-RPC response per `data:` line; an error before the first event is plain JSON. */
async function stream(
  reply: FastifyReply,
  replies: AsyncGenerator<{ response: JsonRpcResponse }>,
  withId: (response: JsonRpcResponse) => Json,
): Promise<FastifyReply> {
  const first = await replies.next();
  if (first.done || first.value.response.error) {
    await replies.return(undefined);
    return reply.send(
      first.done
        ? rpcError(null, RpcErrorCode.internal, "the agent sent no response")
        : withId(first.value.response),
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
  raw.write(`data: ${JSON.stringify(withId(first.value.response))}\n\n`);
  try {
    for await (const r of replies) {
      if (closed) break;
      raw.write(`data: ${JSON.stringify(withId(r.response))}\n\n`);
    }
  } catch (err) {
    if (!closed)
      raw.write(
        `data: ${JSON.stringify(withId({ jsonrpc: "2.0", id: null, error: { code: RpcErrorCode.internal, message: failureText(err, "agent") } }))}\n\n`,
      );
  }
  raw.end();
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
