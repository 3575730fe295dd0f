import { AgentCard, Extensions } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import {
  type AgentExecutor,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  type TaskStore,
} from "@a2a-js/sdk/server";
import type { Mq9Client } from "../client.js";
import type { ConsumedMessage, Consumer } from "../consumer.js";
import type { Heartbeat } from "../heartbeat.js";
import { type AgentCardJson, normalizeCard, withMailboxInterface } from "./agent-card.js";
import {
  A2AHeaders,
  isLegacyMethod,
  isSendMethod,
  isStreamingMethod,
  mailboxUrl,
  SUPPORTED_VERSIONS,
  streamingMethod,
} from "./binding.js";
import { MailboxTaskStore } from "./mailbox-task-store.js";
import { releaseLongPolls } from "./release-long-polls.js";
import {
  endsV03Stream,
  eventInfo,
  isObject,
  type JsonObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
  RpcErrorCode,
  type RpcId,
  rpcError,
} from "./wire.js";

/** Options of an A2A agent served from an mq9 mailbox. */
export interface A2AAgentOptions {
  /** The agent's A2A card (v1.0 or v0.3 JSON); the mailbox interface is added to it. */
  card: JsonObject;
  /** Runs the tasks: any @a2a-js/sdk AgentExecutor. */
  executor: AgentExecutor;
  /** The inbox's mail address (default: the card's name in lowercase, words joined by dots). */
  mailbox?: string;
  /** Seconds the registration lives without a heartbeat (default 90); heartbeats come every third of it. */
  ttlSeconds?: number;
  /** @deprecated The old name of `ttlSeconds`; still read when `ttlSeconds` is not given. */
  ttl?: number;
  /** Tasks run at once (default 4); more wait in the mailbox. */
  concurrency?: number;
  /** How long a task may hold its request message before it is handed out again (default 600 000). */
  leaseMs?: number;
  /** Where tasks are kept (default: the mailbox `<inbox>.tasks`, which survives restarts). */
  taskStore?: TaskStore;
  /** Register the card in the registry (default true). */
  register?: boolean;
  /** Failures that have no caller to go to (a reply mailbox that is gone, …); default: the client's logger. */
  onError?: (error: Error) => void;
}

/** Options of `A2AAgent.stop`. */
export interface A2AAgentStopOptions {
  /** Remove the registration (default true); false leaves it to expire, and requests keep queueing. */
  unregister?: boolean;
}

const encoder = new TextEncoder();

/** `Python Coder` → `python.coder`: a valid mail address from a card name. */
export function mailboxFromName(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ".")
    .replace(/^\.+|\.+$/g, "")
    .slice(0, 120);
  return slug || "agent";
}

interface Incoming {
  request: JsonRpcRequest;
  /** The caller sent a bare A2A object (Python SDK style) rather than JSON-RPC. */
  bare: boolean;
  version: string;
  replyTo?: string;
  requestId: string;
  extensions?: string;
}

class BadRequest extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function readIncoming(message: ConsumedMessage): Incoming {
  const headers = message.headers;
  const base = {
    replyTo: headers[A2AHeaders.replyTo] || undefined,
    requestId: headers[A2AHeaders.requestId] || String(message.msgId),
    extensions: headers[A2AHeaders.extensions],
  };
  let body: unknown;
  try {
    body = message.json();
  } catch (err) {
    throw Object.assign(
      new BadRequest(RpcErrorCode.parse, `Invalid JSON payload: ${(err as Error).message}`),
      {
        base,
      },
    );
  }
  let request: JsonRpcRequest;
  let bare = false;
  if (isObject(body) && body.jsonrpc === "2.0") {
    if (typeof body.method !== "string" || body.method === "") {
      throw Object.assign(
        new BadRequest(RpcErrorCode.invalidRequest, "a JSON-RPC request needs a 'method'"),
        {
          base,
        },
      );
    }
    request = body as unknown as JsonRpcRequest;
  } else if (isObject(body) && (headers[A2AHeaders.method] || isObject(body.message))) {
    bare = true;
    request = {
      jsonrpc: "2.0",
      id: base.requestId,
      method: headers[A2AHeaders.method] || "SendMessage",
      params: body,
    };
  } else {
    throw Object.assign(
      new BadRequest(
        RpcErrorCode.invalidRequest,
        "not an A2A request: send a JSON-RPC 2.0 object with 'method' and 'params'",
      ),
      { base },
    );
  }
  const declared = headers[A2AHeaders.version]?.trim();
  const version = declared
    ? declared.split(".").slice(0, 2).join(".")
    : isLegacyMethod(request.method)
      ? "0.3"
      : "1.0";
  return { ...base, request, bare, version };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<JsonRpcResponse> {
  return typeof (value as AsyncIterable<unknown>)?.[Symbol.asyncIterator] === "function";
}

/**
 * An A2A agent whose endpoint is an mq9 mailbox. It registers its card (with a ttl,
 * kept alive by heartbeats), consumes its inbox in consumer groups, runs an
 * @a2a-js/sdk AgentExecutor per task through the SDK's own request handler, and
 * sends every event to the caller's reply mailbox, the last one marked.
 *
 * Two groups read the inbox: `a2a.tasks` runs sends (up to `concurrency` at once)
 * and `a2a.control` answers everything else (GetTask, CancelTask, …), so a cancel
 * is never stuck behind the tasks it cancels.
 */
export class A2AAgent {
  private readonly consumers: Consumer[] = [];
  private heartbeatHandle: Heartbeat | undefined;
  private processed = 0;
  private stopping: Promise<void> | undefined;
  private readonly v1: JsonRpcTransportHandler;
  private readonly legacy: LegacyJsonRpcTransportHandler;
  private readonly handler: DefaultRequestHandler;

  private constructor(
    private readonly client: Mq9Client,
    /** The inbox's mail address. */
    readonly mailbox: string,
    /** The card as registered (v1.0 JSON, mailbox interface first). */
    readonly card: AgentCardJson,
    /** Where the tasks are kept. */
    readonly taskStore: TaskStore,
    private readonly options: A2AAgentOptions,
  ) {
    // The SDK checks streaming support against its card; the binding always streams.
    const sdkCard = AgentCard.fromJSON({
      ...card,
      capabilities: { ...(card.capabilities as object), streaming: true },
    });
    this.handler = new DefaultRequestHandler(sdkCard, taskStore, options.executor);
    this.v1 = new JsonRpcTransportHandler(this.handler);
    this.legacy = new LegacyJsonRpcTransportHandler(this.handler);
  }

  /** Creates the inbox (and task store), registers the card and starts serving. */
  static async start(client: Mq9Client, options: A2AAgentOptions): Promise<A2AAgent> {
    const base = normalizeCard(options.card);
    const mailbox = options.mailbox ?? mailboxFromName(base.name);
    const card = withMailboxInterface(base, mailboxUrl(client.nats.getServer(), mailbox));
    await client.ensureMailbox({ name: mailbox, ttlSeconds: 0, desc: `A2A inbox of ${base.name}` });
    const store = options.taskStore ?? new MailboxTaskStore(client, `${mailbox}.tasks`);
    if (store instanceof MailboxTaskStore) await store.open();
    const agent = new A2AAgent(client, mailbox, card, store, options);
    agent.serve();
    if (options.register !== false) await agent.register();
    return agent;
  }

  /** Tasks finished since start. */
  get tasksProcessed(): number {
    return this.processed;
  }

  /** Stops taking requests, lets running tasks finish, stops heartbeats and (by default) unregisters. */
  stop(options: A2AAgentStopOptions = {}): Promise<void> {
    this.stopping ??= (async () => {
      if (options.unregister !== false && this.options.register !== false) {
        await this.client.unregister({ mailbox: this.mailbox }).catch((err) => this.report(err));
      }
      await this.heartbeatHandle?.stop();
      await Promise.all(this.consumers.map((consumer) => consumer.stop()));
      if (this.client.isConnected) await releaseLongPolls(this.client, this.mailbox);
    })();
    return this.stopping;
  }

  private async register(): Promise<void> {
    const ttl = this.options.ttlSeconds ?? this.options.ttl ?? 90;
    await this.client.register({
      name: this.card.name,
      mailbox: this.mailbox,
      payload: this.card.description || this.card.name,
      agent_card: this.card,
      ttl,
    });
    this.heartbeatHandle = this.client.heartbeat({
      name: this.card.name,
      mailbox: this.mailbox,
      intervalMs: ttl > 0 ? Math.max(1_000, (ttl * 1000) / 3) : 30_000,
      reportInfo: () => `running, processed=${this.processed}`,
      onError: (err) => this.report(err),
    });
  }

  private serve(): void {
    const concurrency = this.options.concurrency ?? 4;
    const common = { deliver: "earliest" as const, onError: (err: Error) => this.report(err) };
    this.consumers.push(
      this.client.consume(this.mailbox, (message) => this.onMessage(message, "tasks"), {
        ...common,
        group: "a2a.tasks",
        concurrency,
        batch: concurrency,
        leaseMs: this.options.leaseMs ?? 600_000,
      }),
      this.client.consume(this.mailbox, (message) => this.onMessage(message, "control"), {
        ...common,
        group: "a2a.control",
        concurrency: 4,
        batch: 4,
      }),
    );
  }

  private async onMessage(message: ConsumedMessage, lane: "tasks" | "control"): Promise<void> {
    if (message.headers[A2AHeaders.noop]) return;
    let incoming: Incoming;
    try {
      incoming = readIncoming(message);
    } catch (err) {
      // Unreadable requests are answered once, by the control lane, and then dropped (ACKed).
      if (lane === "control" && err instanceof BadRequest) {
        const base = (err as BadRequest & { base: Pick<Incoming, "replyTo" | "requestId"> }).base;
        if (base.replyTo) {
          await this.reply(
            { ...base, bare: false, version: "1.0", request: { jsonrpc: "2.0", id: null, method: "" } },
            rpcError(null, err.code, err.message),
            true,
          );
        } else this.report(new Error(`dropped a request without ${A2AHeaders.replyTo}: ${err.message}`));
      }
      return;
    }
    if (isSendMethod(incoming.request.method) !== (lane === "tasks")) return;
    await this.process(incoming);
  }

  private async process(incoming: Incoming): Promise<void> {
    const { request, version } = incoming;
    const id: RpcId = request.id ?? null;
    if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
      await this.reply(
        incoming,
        rpcError(
          id,
          RpcErrorCode.versionNotSupported,
          `A2A version ${version} is not supported; use one of ${SUPPORTED_VERSIONS.join(", ")}`,
        ),
        true,
      );
      return;
    }
    const legacy = version === "0.3";
    const context = new ServerCallContext({
      requestedVersion: version,
      requestedExtensions: incoming.extensions
        ? Extensions.parseServiceParameter(incoming.extensions)
        : undefined,
    });
    const transport = legacy ? this.legacy : this.v1;
    const send = isSendMethod(request.method);
    let result: Awaited<ReturnType<JsonRpcTransportHandler["handle"]>>;
    try {
      // A send always runs as a stream, so that every event reaches the caller.
      result = await transport.handle(
        { ...request, id, method: send ? streamingMethod(request.method) : request.method } as JsonObject,
        context,
      );
    } catch (err) {
      await this.reply(incoming, rpcError(id, RpcErrorCode.internal, (err as Error).message), true);
      return;
    }
    if (!isAsyncIterable(result)) {
      await this.reply(incoming, result as JsonRpcResponse, true);
      return;
    }
    // A v0.3 stream closes after its own last event (a status-update marked final, or a
    // Message): v0.3 clients take a Task after it for a second task (a2a-sdk 0.3 raises "Task
    // is already set"). A v1 stream and every non-streaming send end with the task as stored
    // (v1 §11.7: a stream MAY repeat a final Task snapshot), which a send answers with.
    const ownEnd = legacy && isStreamingMethod(request.method);
    let taskId: string | undefined;
    let ended = false;
    try {
      for await (const response of result) {
        // The SDK's stream ends right after the event that ends it; nothing follows a last reply.
        if (ended) continue;
        const info = eventInfo(response.result);
        taskId ??= info.taskId;
        if (response.error || info.type === "Message") {
          await this.reply(incoming, response, true, taskId);
          return;
        }
        if (ownEnd && endsV03Stream(info)) {
          // The SDK leaves `final` false at input-required, yet the stream closes there.
          (info.body as JsonObject).final = true;
          ended = true;
        }
        await this.reply(incoming, response, ended, taskId);
      }
    } catch (err) {
      await this.reply(incoming, rpcError(id, RpcErrorCode.internal, (err as Error).message), true, taskId);
      return;
    } finally {
      if (send) this.processed++;
    }
    if (ended) return;
    // Streams end at a terminal or interrupted state; the last word is the task as stored.
    if (!taskId) {
      await this.reply(incoming, rpcError(id, RpcErrorCode.internal, "the agent produced no task"), true);
      return;
    }
    const snapshot = await transport.handle(
      { jsonrpc: "2.0", id, method: legacy ? "tasks/get" : "GetTask", params: { id: taskId } },
      context,
    );
    const last = snapshot as JsonRpcResponse;
    if (ownEnd && isObject(last.result)) {
      // The executor finished the turn without a final status: the stream's end, told as the task's status.
      const task = last.result;
      last.result = {
        kind: "status-update",
        taskId: task.id,
        contextId: task.contextId,
        status: task.status,
        final: true,
      };
    } else if (!legacy && last.result !== undefined) {
      // GetTask answers with a bare Task; as a stream event (v1) it is wrapped as `{ task }`.
      last.result = { task: last.result };
    }
    await this.reply(incoming, last, true, taskId);
  }

  /** Sends one response to the caller's reply mailbox; a caller that is gone is reported, not retried. */
  private async reply(
    incoming: Incoming,
    response: JsonRpcResponse,
    last: boolean,
    taskId?: string,
  ): Promise<void> {
    if (!incoming.replyTo) return;
    const info = response.error
      ? { type: "Error", body: { error: response.error } }
      : eventInfo(response.result);
    const headers: Record<string, string> = {
      [A2AHeaders.requestId]: incoming.requestId,
      [A2AHeaders.type]: info.type,
    };
    const task = taskId ?? ("taskId" in info ? info.taskId : undefined);
    if (task) headers[A2AHeaders.taskId] = task;
    if (last) headers[A2AHeaders.last] = "true";
    const body = incoming.bare ? info.body : response;
    try {
      await this.client.send(incoming.replyTo, encoder.encode(JSON.stringify(body)), { headers });
    } catch (err) {
      this.report(new Error(`could not reply to ${incoming.replyTo}: ${(err as Error).message}`));
    }
  }

  private report(error: Error): void {
    if (this.options.onError) this.options.onError(error);
    else this.client.logger.warn(`mq9 A2A agent ${this.mailbox}: ${error.message}`);
  }
}
