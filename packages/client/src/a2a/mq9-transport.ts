import {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  type Message,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import {
  ClientCallContextKey,
  type RequestOptions,
  type Transport,
  type TransportFactory,
} from "@a2a-js/sdk/client";
import { fromJsonRpcErrorResponse } from "@a2a-js/sdk/errors";
import { A2AError } from "./a2a-error.js";
import { MQ9_A2A_BINDING } from "./binding.js";
import type { RpcChannel } from "./rpc-channel.js";
import type { JsonRpcResponse } from "./wire.js";

/** Per-call timeout in a request's `context`: `timeoutKey.set(ms)`. */
export const timeoutKey = new ClientCallContextKey<number>("mq9 timeout (ms)");

/** Options of the mailbox transport. */
export interface Mq9TransportOptions {
  /** How long a call waits for the agent's final response (default 300 000). */
  timeoutMs?: number;
}

type Codec<T> = { fromJSON(object: unknown): T; toJSON(message: T): unknown };

/** The mailbox an interface URL names: `mq9://host/<mailbox>` or a bare mail address. */
export function mailboxOf(url: string): string {
  const match = /^mq9s?:\/\/[^/]*\/(.+)$/.exec(url);
  return match ? match[1] : url;
}

function lowercaseKeys(parameters: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parameters ?? {})) out[name.toLowerCase()] = value;
  return out;
}

/** An @a2a-js/sdk Transport that carries A2A JSON-RPC through an agent's mq9 mailbox. */
export class Mq9Transport implements Transport {
  private readonly timeoutMs: number;

  constructor(
    private readonly channel: RpcChannel,
    /** The agent's inbox. */
    readonly mailbox: string,
    options: Mq9TransportOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 300_000;
  }

  get protocolName(): string {
    return MQ9_A2A_BINDING;
  }

  get protocolVersion(): string {
    return "1.0";
  }

  async sendMessage(params: SendMessageRequest, options?: RequestOptions): Promise<Message | Task> {
    const immediate = params.configuration?.returnImmediately === true;
    let last: JsonRpcResponse | undefined;
    // The agent streams every event, then a final Task snapshot; a non-blocking send
    // returns at the first event (the Task), leaving the rest in the reply mailbox.
    for await (const reply of this.calls("SendMessage", SendMessageRequest.toJSON(params), options)) {
      last = this.checked(reply.response);
      if (immediate) break;
    }
    const payload = SendMessageResponse.fromJSON(this.result(last)).payload;
    if (!payload) throw new A2AError("INVALID_RESPONSE", `${this.mailbox} answered SendMessage with no task`);
    return payload.value;
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    options?: RequestOptions,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.stream("SendStreamingMessage", SendMessageRequest.toJSON(params), options);
  }

  async *resubscribeTask(
    params: SubscribeToTaskRequest,
    options?: RequestOptions,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.stream("SubscribeToTask", SubscribeToTaskRequest.toJSON(params), options);
  }

  getTask(params: GetTaskRequest, options?: RequestOptions): Promise<Task> {
    return this.single("GetTask", params, GetTaskRequest, Task, options);
  }

  cancelTask(params: CancelTaskRequest, options?: RequestOptions): Promise<Task> {
    return this.single("CancelTask", params, CancelTaskRequest, Task, options);
  }

  listTasks(params: ListTasksRequest, options?: RequestOptions): Promise<ListTasksResponse> {
    return this.single("ListTasks", params, ListTasksRequest, ListTasksResponse, options);
  }

  getExtendedAgentCard(params: GetExtendedAgentCardRequest, options?: RequestOptions): Promise<AgentCard> {
    return this.single("GetExtendedAgentCard", params, GetExtendedAgentCardRequest, AgentCard, options);
  }

  createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    options?: RequestOptions,
  ): Promise<TaskPushNotificationConfig> {
    return this.single(
      "CreateTaskPushNotificationConfig",
      params,
      TaskPushNotificationConfig,
      TaskPushNotificationConfig,
      options,
    );
  }

  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    options?: RequestOptions,
  ): Promise<TaskPushNotificationConfig> {
    return this.single(
      "GetTaskPushNotificationConfig",
      params,
      GetTaskPushNotificationConfigRequest,
      TaskPushNotificationConfig,
      options,
    );
  }

  listTaskPushNotificationConfig(
    params: ListTaskPushNotificationConfigsRequest,
    options?: RequestOptions,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.single(
      "ListTaskPushNotificationConfigs",
      params,
      ListTaskPushNotificationConfigsRequest,
      ListTaskPushNotificationConfigsResponse,
      options,
    );
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    options?: RequestOptions,
  ): Promise<void> {
    const response = await this.last(
      "DeleteTaskPushNotificationConfig",
      DeleteTaskPushNotificationConfigRequest.toJSON(params),
      options,
    );
    this.checked(response);
  }

  private calls(method: string, params: unknown, options: RequestOptions | undefined) {
    const serviceParameters = lowercaseKeys(options?.serviceParameters);
    const version = serviceParameters["a2a-version"] ?? this.protocolVersion;
    delete serviceParameters["a2a-version"];
    const timeoutMs = (options?.context && timeoutKey.get(options.context)) ?? this.timeoutMs;
    return this.channel.call(
      this.mailbox,
      { jsonrpc: "2.0", method, params },
      {
        timeoutMs,
        signal: options?.signal,
        version,
        headers: serviceParameters,
        priority: method === "CancelTask" ? "critical" : undefined,
      },
    );
  }

  private async *stream(
    method: string,
    params: unknown,
    options: RequestOptions | undefined,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    for await (const reply of this.calls(method, params, options)) {
      yield StreamResponse.fromJSON(this.result(this.checked(reply.response)));
    }
  }

  private async last(method: string, params: unknown, options?: RequestOptions): Promise<JsonRpcResponse> {
    let last: JsonRpcResponse | undefined;
    for await (const reply of this.calls(method, params, options)) last = reply.response;
    if (!last) throw new A2AError("INVALID_RESPONSE", `${this.mailbox} sent no response to ${method}`);
    return last;
  }

  private async single<P, R>(
    method: string,
    params: P,
    request: Codec<P>,
    response: Codec<R>,
    options?: RequestOptions,
  ): Promise<R> {
    const reply = await this.last(method, request.toJSON(params), options);
    return response.fromJSON(this.result(this.checked(reply)));
  }

  private checked(response: JsonRpcResponse): JsonRpcResponse {
    if (response.error) {
      throw fromJsonRpcErrorResponse(response as Parameters<typeof fromJsonRpcErrorResponse>[0]);
    }
    return response;
  }

  private result(response: JsonRpcResponse | undefined): unknown {
    if (response?.result === undefined) {
      throw new A2AError("INVALID_RESPONSE", `${this.mailbox} sent a response without a result`);
    }
    return response.result;
  }
}

/** Plugs the mailbox transport into @a2a-js/sdk's ClientFactory for cards listing the mq9 binding. */
export class Mq9TransportFactory implements TransportFactory {
  constructor(
    private readonly channel: RpcChannel,
    private readonly options: Mq9TransportOptions = {},
  ) {}

  get protocolName(): string {
    return MQ9_A2A_BINDING;
  }

  async create(url: string, _agentCard: AgentCard): Promise<Transport> {
    return new Mq9Transport(this.channel, mailboxOf(url), this.options);
  }
}
