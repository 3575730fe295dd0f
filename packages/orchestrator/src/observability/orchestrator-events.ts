import type { DeadLetter, Envelope } from "@mq9/agent/internal";
import type { AgentView } from "../routing/agent-view.js";
import { type DeadKind, LOOP_KINDS, type RouteLayer } from "../routing/router.js";
import type { StepState, TaskState, TaskStatus } from "../scheduler/task-state.js";
import type { WebhookEvent, WebhookNotifier } from "../webhooks/webhook-notifier.js";
import type { OrchestratorMetrics } from "./orchestrator-metrics.js";

/** A log line of the orchestrator: level, message and metadata fields (ids, agent, durations). */
export type OrchestratorLog = (
  level: "debug" | "info" | "warn",
  message: string,
  fields: Record<string, unknown>,
) => void;

const STATUS_EVENT: Partial<Record<TaskStatus, WebhookEvent>> = {
  completed: "task_completed",
  failed: "task_failed",
  timeout: "task_timeout",
  canceled: "task_canceled",
};

/**
 * What the orchestrator does when something happens in the router, the directory or the
 * scheduler: it counts it in the metrics, logs a line (metadata only, never payloads) and
 * notifies the webhooks that ask for it. Each method is given as one of their callbacks.
 */
export class OrchestratorEvents {
  constructor(
    private readonly metrics: OrchestratorMetrics,
    private readonly log: OrchestratorLog,
    private readonly webhooks: WebhookNotifier,
    /** Share (0..1) of routed messages that get a log line. */
    private readonly sampleRate: number,
  ) {}

  readonly routed = (layer: RouteLayer, envelope: Envelope, agent: AgentView): void => {
    this.metrics.dispatched(layer);
    if (this.sampleRate > 0 && Math.random() < this.sampleRate) {
      this.log("debug", `routed ${envelope.msg_type} by ${layer}`, {
        trace_id: envelope.trace_id,
        msg_id: envelope.msg_id,
        source: envelope.source,
        agent: agent.name,
        hops: envelope.hops,
        layer,
      });
    }
  };

  readonly deadLetter = (letter: DeadLetter, kind: DeadKind): void => {
    this.metrics.deadLetter(kind);
    const envelope = letter.envelope;
    const fields = {
      kind,
      reason: letter.reason,
      trace_id: envelope?.trace_id,
      msg_id: envelope?.msg_id,
      source: envelope?.source,
      target: envelope?.target,
      path: envelope?.path,
      hops: envelope?.hops,
    };
    if (!LOOP_KINDS.has(kind)) {
      this.log("warn", `dead letter (${kind}): ${letter.reason}`, fields);
      return;
    }
    this.metrics.loopStopped(kind);
    this.log("warn", `loop guard stopped a message (${kind}): ${letter.reason}`, fields);
    this.webhooks.notify("loop_detected", fields);
  };

  readonly agentDied = (agent: AgentView): void => {
    this.webhooks.notify("agent_dead", {
      name: agent.name,
      mailbox: agent.mailbox,
      last_seen: agent.lastSeenMs,
      capabilities: agent.capabilities,
    });
  };

  readonly stepEnded = (task: TaskState, step: StepState): void => {
    const duration =
      step.finished_at !== undefined && step.started_at !== undefined
        ? step.finished_at - step.started_at
        : undefined;
    this.metrics.stepFinished(step.status, duration);
    // A merge whose inputs gave one field twice lost a value: said out loud, by field name only.
    const clashed = step.merge_clashes ? Object.keys(step.merge_clashes) : [];
    const level = clashed.length > 0 ? "warn" : "info";
    const clash = clashed.length > 0 ? `; inputs clashed on ${clashed.join(", ")} (the last kept)` : "";
    this.log(level, `step ${step.id} ${step.status}${clash}`, {
      task_id: task.task_id,
      trace_id: task.trace_id,
      step_id: step.id,
      agent: step.agent,
      status: step.status,
      attempts: step.attempts,
      duration_ms: duration,
      error: step.error,
      merge_clashes: step.merge_clashes,
    });
  };

  readonly taskEnded = (task: TaskState): void => {
    this.metrics.taskFinished(task);
    this.log(task.status === "completed" ? "info" : "warn", `task ${task.task_id} ${task.status}`, {
      task_id: task.task_id,
      task_type: task.task_type,
      trace_id: task.trace_id,
      status: task.status,
      duration_ms: (task.finished_at ?? task.updated_at) - task.created_at,
      error: task.error,
    });
    const event = STATUS_EVENT[task.status];
    if (event) this.webhooks.notify(event, task);
  };
}
