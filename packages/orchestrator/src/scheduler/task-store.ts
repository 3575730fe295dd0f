import { type BusNames, taskKey } from "@mq9/agent/internal";
import type { Mq9Client } from "@mq9/client";
import { OrchestratorDefaults } from "../defaults.js";
import { isTerminal, type TaskState } from "./task-state.js";

/** Seconds a finished task's state is kept by default: a week (OrchestratorDefaults). */
export const DEFAULT_RETENTION_S = OrchestratorDefaults.retentionSeconds;

/**
 * Task state kept in mq9 itself: one mailbox, one message per task under the key
 * `task.<id>`, so key compaction leaves exactly the latest state of each task.
 * A finished task's last state carries a TTL and expires after the retention.
 */
export class TaskStore {
  constructor(
    private readonly client: Mq9Client,
    private readonly names: BusNames,
    private readonly retentionSeconds = DEFAULT_RETENTION_S,
  ) {}

  get mailbox(): string {
    return this.names.tasks;
  }

  async ensureMailbox(): Promise<void> {
    await this.client.ensureMailbox({ name: this.mailbox });
  }

  /** Persists the task's current state (replacing the previous one). */
  async save(task: TaskState): Promise<void> {
    task.revision++;
    await this.client.send(this.mailbox, JSON.stringify(task), {
      key: taskKey(task.task_id),
      ttlSeconds:
        isTerminal(task.status) && task.compensation_status !== "running" ? this.retentionSeconds : undefined,
    });
  }

  /** The stored state of one task, or undefined. */
  async load(taskId: string): Promise<TaskState | undefined> {
    const [latest] = await this.client.query(this.mailbox, { key: taskKey(taskId) });
    return latest?.json<TaskState>();
  }

  /** Every stored task, oldest first: a stateless walk over the mailbox by msg_id. */
  async loadAll(): Promise<TaskState[]> {
    const byId = new Map<string, TaskState>();
    let fromId: number | undefined;
    for (;;) {
      const page = await this.client.fetch(this.mailbox, {
        deliver: fromId === undefined ? "earliest" : "from_id",
        fromId,
        batch: 500,
        maxWaitMs: 0,
      });
      if (page.length === 0) break;
      for (const message of page) {
        const state = message.json<TaskState>();
        const known = byId.get(state.task_id);
        if (!known || known.revision < state.revision) byId.set(state.task_id, state);
      }
      const last = Math.max(...page.map((m) => m.msgId));
      if (fromId !== undefined && last < fromId) break;
      fromId = last + 1;
    }
    return [...byId.values()].sort((a, b) => a.created_at - b.created_at);
  }
}
