import { endsStream, eventInfo, type JsonRpcResponse } from "@mq9/client/a2a";

/** What the gateway last saw of a task. */
export interface RememberedTask {
  taskId: string;
  contextId?: string;
  /** v1 state name (`TASK_STATE_…`). */
  state?: string;
}

/** A message the gateway forwarded: its task, once the agent named it. */
interface SentMessage {
  task: Promise<RememberedTask | undefined>;
  settle(task: RememberedTask | undefined): void;
  current?: RememberedTask;
}

const INTERRUPTED = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);

/** A Map that forgets its oldest entries past `limit`. */
class Bounded<V> extends Map<string, V> {
  constructor(private readonly limit: number) {
    super();
  }
  override set(key: string, value: V): this {
    this.delete(key);
    super.set(key, value);
    if (this.size > this.limit) this.delete(this.keys().next().value as string);
    return this;
  }
}

/**
 * The gateway's memory of the tasks it carried, per agent mailbox, so that plain HTTP
 * clients that retry or continue by context get the A2A behaviour they expect:
 *
 * - a send whose `messageId` was already forwarded is the same request again (a client
 *   that gave up on a stream and falls back to `message/send`, as Hermes' `a2a_call`
 *   does): it is answered from that task, never delivered to the agent twice;
 * - a send that carries only a `contextId` continues the task of that context that is
 *   waiting for input (A2A lets the server infer the task from the context).
 *
 * It is memory only (bounded); after a gateway restart a repeat is delivered again.
 */
export class TaskMemory {
  private readonly messages = new Bounded<SentMessage>(10_000);
  private readonly contexts = new Bounded<RememberedTask>(10_000);

  /** The send this message id already made, if any. */
  repeatOf(mailbox: string, messageId: string | undefined): Promise<RememberedTask | undefined> | undefined {
    if (!messageId) return undefined;
    const sent = this.messages.get(`${mailbox}\u0000${messageId}`);
    return sent && (sent.current ? Promise.resolve(sent.current) : sent.task);
  }

  /** The task a context-only follow-up continues: the context's latest, while it waits for input. */
  continuationOf(mailbox: string, contextId: string | undefined): string | undefined {
    if (!contextId) return undefined;
    const task = this.contexts.get(`${mailbox}\u0000${contextId}`);
    return task?.state && INTERRUPTED.has(task.state) ? task.taskId : undefined;
  }

  /** Starts remembering a send; `observe` each response, `done` when the call ends. */
  track(mailbox: string, messageId: string | undefined) {
    let settle!: (task: RememberedTask | undefined) => void;
    const sent: SentMessage = {
      task: new Promise((resolve) => {
        settle = resolve;
      }),
      settle: (task) => settle(task),
    };
    if (messageId) this.messages.set(`${mailbox}\u0000${messageId}`, sent);
    return {
      observe: (response: JsonRpcResponse) => {
        if (response.error) return;
        const info = eventInfo(response.result);
        if (!info.taskId) return;
        const task: RememberedTask = {
          taskId: info.taskId,
          contextId: info.contextId ?? sent.current?.contextId,
          state: info.state ?? sent.current?.state,
        };
        sent.current = task;
        sent.settle(task);
        if (task.contextId) this.contexts.set(`${mailbox}\u0000${task.contextId}`, task);
      },
      done: () => sent.settle(sent.current),
    };
  }

  /** Whether a repeat can be answered with the task as it is (nothing more will happen without the client). */
  static settled(state: string | undefined): boolean {
    return endsStream(state) || (state !== undefined && INTERRUPTED.has(state));
  }
}
