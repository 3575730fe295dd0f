import { Artifact, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, type ExecutionEventBus, type RequestContext } from "@a2a-js/sdk/server";
import { type JsonObject, textMessage } from "./wire.js";

/** v1 task state names an executor reports. */
export type TaskStateName =
  | "TASK_STATE_SUBMITTED"
  | "TASK_STATE_WORKING"
  | "TASK_STATE_INPUT_REQUIRED"
  | "TASK_STATE_COMPLETED"
  | "TASK_STATE_FAILED"
  | "TASK_STATE_CANCELED"
  | "TASK_STATE_REJECTED";

/**
 * Publishes one task's events on an @a2a-js/sdk event bus from plain text, so an
 * executor reads like its story: `start()`, `working()`, `artifact(text)`, `complete()`.
 */
export class TaskEvents {
  readonly taskId: string;
  readonly contextId: string;

  constructor(
    private readonly context: RequestContext,
    private readonly bus: ExecutionEventBus,
  ) {
    this.taskId = context.taskId;
    this.contextId = context.contextId;
  }

  /** Publishes the task (the first event of every turn, as the SDK requires); a new task starts submitted. */
  start(): void {
    const existing = this.context.task;
    if (existing) {
      this.bus.publish(AgentEvent.task(existing));
      return;
    }
    this.bus.publish(
      AgentEvent.task(
        Task.fromJSON({
          id: this.taskId,
          contextId: this.contextId,
          status: { state: "TASK_STATE_SUBMITTED", timestamp: new Date().toISOString() },
          history: [Message.toJSON(this.context.userMessage)],
        }),
      ),
    );
  }

  /** A status update, with an optional agent message (e.g. the question of input-required). */
  status(state: TaskStateName, text?: string): void {
    const status: JsonObject = { state, timestamp: new Date().toISOString() };
    if (text !== undefined) {
      status.message = textMessage(text, {
        role: "ROLE_AGENT",
        taskId: this.taskId,
        contextId: this.contextId,
      });
    }
    this.bus.publish(
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({ taskId: this.taskId, contextId: this.contextId, status }),
      ),
    );
  }

  working(text?: string): void {
    this.status("TASK_STATE_WORKING", text);
  }

  /** Pauses the task until a follow-up message with the same taskId. */
  inputRequired(question: string): void {
    this.status("TASK_STATE_INPUT_REQUIRED", question);
  }

  complete(text?: string): void {
    this.status("TASK_STATE_COMPLETED", text);
  }

  fail(text: string): void {
    this.status("TASK_STATE_FAILED", text);
  }

  canceled(text?: string): void {
    this.status("TASK_STATE_CANCELED", text);
  }

  /** An artifact, or a chunk of one (`append` adds to the artifact with the same id). */
  artifact(
    text: string,
    options: { artifactId?: string; name?: string; append?: boolean; lastChunk?: boolean } = {},
  ): void {
    const artifact = Artifact.fromJSON({
      artifactId: options.artifactId ?? "result",
      name: options.name ?? options.artifactId ?? "result",
      parts: [{ text }],
    });
    this.bus.publish(
      AgentEvent.artifactUpdate(
        TaskArtifactUpdateEvent.fromJSON({
          taskId: this.taskId,
          contextId: this.contextId,
          artifact: Artifact.toJSON(artifact),
          append: options.append ?? false,
          lastChunk: options.lastChunk ?? true,
        }),
      ),
    );
  }

  /** Tells the SDK this turn is over. */
  finished(): void {
    this.bus.finished();
  }
}
