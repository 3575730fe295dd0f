import { type ListTasksRequest, type ListTasksResponse, Task } from "@a2a-js/sdk";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import type { Mq9Client } from "../client.js";

/** QUERY returns at most this many messages, so ListTasks sees the most recent tasks up to it. */
const QUERY_LIMIT = 100;

/**
 * An @a2a-js/sdk TaskStore kept in a mailbox: every save is a SEND with the key
 * `task.<id>`, so key compaction keeps the latest state of each task and the store
 * survives restarts of the agent (the convention of the official mq9 A2A modules).
 */
export class MailboxTaskStore implements TaskStore {
  private ready: Promise<void> | undefined;

  constructor(
    private readonly client: Mq9Client,
    /** The mailbox holding the tasks, by convention `<inbox>.tasks`. */
    readonly mailbox: string,
  ) {}

  /** Creates the mailbox unless it exists (never expires: tasks outlive restarts). */
  open(): Promise<void> {
    this.ready ??= this.client
      .ensureMailbox({ name: this.mailbox, ttlSeconds: 0, desc: "A2A task store" })
      .then(
        () => {},
        (err: unknown) => {
          this.ready = undefined;
          throw err;
        },
      );
    return this.ready;
  }

  async save(task: Task, _context?: ServerCallContext): Promise<void> {
    await this.open();
    await this.client.send(this.mailbox, Task.toJSON(task) as Record<string, unknown>, {
      key: keyOf(task.id),
    });
  }

  async load(taskId: string, _context?: ServerCallContext): Promise<Task | undefined> {
    await this.open();
    const [message] = await this.client.query(this.mailbox, { key: keyOf(taskId), limit: 1 });
    return message ? Task.fromJSON(message.json()) : undefined;
  }

  async list(params: ListTasksRequest, _context?: ServerCallContext): Promise<ListTasksResponse> {
    await this.open();
    const messages = await this.client.query(this.mailbox, { limit: QUERY_LIMIT });
    const latest = new Map<string, Task>();
    for (const message of messages) {
      const task = Task.fromJSON(message.json());
      latest.set(task.id, task);
    }
    let tasks = [...latest.values()];
    if (params.contextId) tasks = tasks.filter((t) => t.contextId === params.contextId);
    if (params.status) tasks = tasks.filter((t) => t.status?.state === params.status);
    if (params.statusTimestampAfter) {
      const after = params.statusTimestampAfter;
      tasks = tasks.filter((t) => (t.status?.timestamp ?? "") > after);
    }
    tasks.sort((a, b) => (b.status?.timestamp ?? "").localeCompare(a.status?.timestamp ?? ""));
    const pageSize = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    const offset = Number.parseInt(params.pageToken || "0", 10) || 0;
    const page = tasks.slice(offset, offset + pageSize).map((task) => {
      const copy = { ...task };
      if (!params.includeArtifacts) copy.artifacts = [];
      if (params.historyLength !== undefined) copy.history = copy.history.slice(-params.historyLength || 0);
      if (params.historyLength === 0) copy.history = [];
      return copy;
    });
    const next = offset + pageSize < tasks.length ? String(offset + pageSize) : "";
    return { tasks: page, nextPageToken: next, pageSize, totalSize: tasks.length };
  }

  /** Removes a task (QUERY its key, DELETE what comes back). */
  async delete(taskId: string): Promise<void> {
    await this.open();
    for (const message of await this.client.query(this.mailbox, { key: keyOf(taskId) })) {
      await this.client.delete(this.mailbox, message.msgId);
    }
  }
}

function keyOf(taskId: string): string {
  return `task.${taskId}`;
}
