import { AgentCard, Message, SendMessageRequest, StreamResponse, Task } from "@a2a-js/sdk";
import { type Client, ClientCallContext, ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import type { AgentDiscoverRequest, AgentEntry } from "@mq9/protocol";
import type { Mq9Client } from "../client.js";
import { A2AError } from "./a2a-error.js";
import { type AgentCardJson, cardOfEntry } from "./agent-card.js";
import { MQ9_A2A_BINDING } from "./binding.js";
import { Mq9TransportFactory, mailboxOf, timeoutKey } from "./mq9-transport.js";
import { ReplyInbox, type ReplyInboxOptions } from "./reply-inbox.js";
import { RpcChannel } from "./rpc-channel.js";
import { eventInfo, isObject, type JsonObject, type TaskJson, textMessage } from "./wire.js";

/** Options of an A2A client over mq9. */
export interface A2AClientOptions extends ReplyInboxOptions {
  /** Default for how long a call waits for the agent's final event (default 300 000 ms). */
  timeoutMs?: number;
}

/** A registered agent that speaks A2A. */
export interface A2AAgentRef {
  name: string;
  /** Its inbox. */
  mailbox: string;
  /** Its card (v1.0 JSON, mailbox interface first). */
  card: AgentCardJson;
  /** The registry entry it came from. */
  entry?: AgentEntry;
}

/** Who to call: a name or mailbox to look up, a discovered agent, or a card. */
export type AgentTarget = string | A2AAgentRef | AgentCardJson;

/** Discovery query: full text, natural language, tags. */
export interface A2ADiscoverQuery extends AgentDiscoverRequest {
  tags?: string[];
}

/** Options of send and stream. */
export interface A2ASendOptions {
  /** Continue this task (answer an input-required question). */
  taskId?: string;
  contextId?: string;
  /** Default: the client's timeoutMs. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Return as soon as the task exists; its events keep arriving in the reply mailbox. */
  returnImmediately?: boolean;
  metadata?: JsonObject;
}

/** What send resolves with: the v1 SendMessageResponse JSON, `{ task }` or `{ message }`. */
export type A2ASendResult =
  | { task: TaskJson; message?: undefined }
  | { message: JsonObject; task?: undefined };

/**
 * Calls A2A agents through their mq9 mailboxes: discover, send (await the final task),
 * stream (every event), getTask, cancelTask, follow-ups for input-required tasks. Each
 * call goes through an @a2a-js/sdk Client built with the mailbox transport; the caller's
 * reply mailbox is created (and renewed) on first use.
 */
export class A2AClient {
  private readonly inbox: ReplyInbox;
  private readonly channel: RpcChannel;
  private readonly factory: ClientFactory;
  private readonly clients = new Map<string, Promise<Client>>();
  private readonly timeoutMs: number;

  constructor(
    private readonly client: Mq9Client,
    options: A2AClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 300_000;
    this.inbox = new ReplyInbox(client, options);
    this.channel = new RpcChannel(client, this.inbox);
    this.factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new Mq9TransportFactory(this.channel, { timeoutMs: this.timeoutMs })],
        preferredTransports: [MQ9_A2A_BINDING],
      }),
    );
  }

  /** The caller's reply mailbox (created on first use). */
  replyMailbox(): Promise<string> {
    return this.inbox.address();
  }

  /** Registered agents that carry an A2A card: all, or by `text`, `semantic` or `tags`. */
  async discover(query: A2ADiscoverQuery = {}): Promise<A2AAgentRef[]> {
    const entries = await this.client.discover(query);
    return entries.map((entry) => this.refOf(entry)).filter((ref): ref is A2AAgentRef => ref !== undefined);
  }

  /** Looks an agent up by its registered name or mailbox. */
  async resolve(target: AgentTarget): Promise<A2AAgentRef> {
    if (typeof target !== "string") {
      if ("card" in target && isObject(target.card)) return target as A2AAgentRef;
      const card = target as AgentCardJson;
      const iface = (card.supportedInterfaces as JsonObject[] | undefined)?.find(
        (i) => i.protocolBinding === MQ9_A2A_BINDING,
      );
      if (!iface || typeof iface.url !== "string") {
        throw new A2AError("NOT_AN_A2A_AGENT", `the card of ${card.name} has no mq9 mailbox interface`);
      }
      return { name: card.name, mailbox: mailboxOf(iface.url), card };
    }
    // Direct lookups: by name first, then by mailbox (a target may be either). Names need not be
    // unique, so a registration that carries a card wins over one that does not.
    let entries = await this.client.discover({ name: target, limit: 100 });
    if (entries.length === 0) entries = await this.client.discover({ mailbox: mailboxOf(target), limit: 1 });
    const entry = entries.find((e) => this.refOf(e) !== undefined) ?? entries[0];
    if (!entry) {
      throw new A2AError(
        "AGENT_NOT_FOUND",
        `no registered agent is named ${target} or reads mailbox ${target}; list agents with discover()`,
      );
    }
    const ref = this.refOf(entry);
    if (!ref) {
      throw new A2AError(
        "NOT_AN_A2A_AGENT",
        `${target} is registered without an A2A card; send it plain messages with Mq9Client.send`,
      );
    }
    return ref;
  }

  /** The @a2a-js/sdk Client for an agent, for anything this class does not wrap. */
  sdkClient(target: AgentTarget): Promise<Client> {
    return this.resolve(target).then((ref) => {
      let client = this.clients.get(ref.mailbox);
      if (!client) {
        client = this.factory.createFromAgentCard(AgentCard.fromJSON(ref.card));
        this.clients.set(ref.mailbox, client);
        client.catch(() => this.clients.delete(ref.mailbox));
      }
      return client;
    });
  }

  /** Sends a message and resolves with the final task (or the agent's message): completed, failed, canceled or input-required. */
  async send(
    target: AgentTarget,
    message: string | JsonObject,
    options: A2ASendOptions = {},
  ): Promise<A2ASendResult> {
    const client = await this.sdkClient(target);
    const result = await client.sendMessage(this.request(message, options), this.callOptions(options));
    return isTask(result)
      ? { task: Task.toJSON(result) as TaskJson }
      : { message: Message.toJSON(result) as JsonObject };
  }

  /** Sends a message and yields every event (v1 StreamResponse JSON), ending with the task as stored. */
  async *stream(
    target: AgentTarget,
    message: string | JsonObject,
    options: A2ASendOptions = {},
  ): AsyncGenerator<JsonObject, void, undefined> {
    const client = await this.sdkClient(target);
    for await (const event of client.sendMessageStream(
      this.request(message, options),
      this.callOptions(options),
    )) {
      yield StreamResponse.toJSON(event) as JsonObject;
    }
  }

  /** The task as the agent stores it. */
  async getTask(
    target: AgentTarget,
    taskId: string,
    options: { historyLength?: number; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<TaskJson> {
    const client = await this.sdkClient(target);
    const task = await client.getTask(
      { tenant: "", id: taskId, historyLength: options.historyLength },
      this.callOptions(options),
    );
    return Task.toJSON(task) as TaskJson;
  }

  /** Asks the agent to cancel a task; resolves with the canceled task. */
  async cancelTask(
    target: AgentTarget,
    taskId: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<TaskJson> {
    const client = await this.sdkClient(target);
    const task = await client.cancelTask(
      { tenant: "", id: taskId, metadata: undefined },
      this.callOptions(options),
    );
    return Task.toJSON(task) as TaskJson;
  }

  /**
   * The final event of a task whose caller stopped waiting (a timeout, or a restart of a
   * client with a named reply mailbox): resolves when it is in the reply mailbox.
   */
  async waitForTask(
    taskId: string,
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<JsonObject> {
    const reply = await this.inbox.waitForTask(taskId, options.timeoutMs ?? this.timeoutMs, options.signal);
    if (reply.response.error) throw new A2AError("INVALID_RESPONSE", reply.response.error.message);
    const info = eventInfo(reply.response.result);
    return info.body as JsonObject;
  }

  /** Stops reading the reply mailbox; calls still waiting fail with CLOSED. */
  close(): Promise<void> {
    return this.inbox.close();
  }

  private refOf(entry: AgentEntry): A2AAgentRef | undefined {
    const card = cardOfEntry(entry, this.client.nats.getServer());
    if (!card || typeof entry.mailbox !== "string") return undefined;
    return {
      name: typeof entry.name === "string" ? entry.name : card.name,
      mailbox: entry.mailbox,
      card,
      entry,
    };
  }

  private request(message: string | JsonObject, options: A2ASendOptions): SendMessageRequest {
    const wire =
      typeof message === "string"
        ? textMessage(message, { taskId: options.taskId, contextId: options.contextId })
        : {
            ...message,
            ...(options.taskId ? { taskId: options.taskId } : {}),
            ...(options.contextId ? { contextId: options.contextId } : {}),
          };
    wire.messageId ??= crypto.randomUUID();
    wire.role ??= "ROLE_USER";
    return SendMessageRequest.fromJSON({
      message: wire,
      configuration: { returnImmediately: options.returnImmediately ?? false },
      metadata: options.metadata,
    });
  }

  private callOptions(options: { timeoutMs?: number; signal?: AbortSignal }) {
    return {
      signal: options.signal,
      context: ClientCallContext.create(timeoutKey.set(options.timeoutMs ?? this.timeoutMs)),
    };
  }
}

function isTask(result: Message | Task): result is Task {
  return "status" in result && "artifacts" in result;
}
