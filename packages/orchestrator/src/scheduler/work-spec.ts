import { createEnvelope, type Envelope } from "@mq9/agent/internal";
import type { Performer, RetryPolicy, StepTemplate, TaskTemplate } from "../templates/task-template.js";
import { stepInput } from "./step-io.js";
import type { TaskState } from "./task-state.js";
import type { WorkRef } from "./task-timers.js";

/** The `source` of every envelope the scheduler sends. */
export const ORCHESTRATOR = "orchestrator";

/** What one unit of work (a step, or the compensation of one) needs to be dispatched and retried. */
export interface WorkSpec {
  label: string;
  ref: WorkRef;
  performer: Performer;
  retry: RetryPolicy;
  timeoutMs?: number;
  /** The message of one attempt: its id and creation time are given so a re-send is the same message. */
  envelope(msgId: string, createdAtMs: number, target: string): Envelope;
}

/** A task as specs read it: its state and the template version it runs. */
export interface SpecSource {
  readonly state: TaskState;
  readonly template: TaskTemplate | undefined;
}

/** What work specs need from the scheduler's configuration. */
export interface WorkContext {
  /** Where answers go: the orchestrator's inbox. */
  inbox: string;
  /** Timeout of one compensation attempt when its step has none. */
  compensationTimeoutMs: number;
}

/** The spec of step `id` of a task with a template. */
export function stepSpec(task: SpecSource, id: string, context: WorkContext): WorkSpec {
  const step = templateStep(task, id);
  const performer = step.performer!;
  return {
    label: `step '${id}'`,
    ref: { step: id },
    performer,
    retry: step.retry,
    timeoutMs: step.timeoutMs,
    envelope: (msgId, createdAtMs, target) =>
      workEnvelope(
        task,
        {
          msgId,
          createdAtMs,
          target,
          type: "query",
          stepId: id,
          capability: "capability" in performer ? performer.capability : undefined,
          payload: stepInput(step, task.state),
        },
        context.inbox,
      ),
  };
}

/** The spec of the task's compensation number `index` (compensations run newest step first). */
export function compensationSpec(task: SpecSource, index: number, context: WorkContext): WorkSpec {
  const compensation = task.state.compensations[index];
  const step = task.template?.steps.find((s) => s.id === compensation.step_id);
  if (!step?.compensate) {
    throw new Error(`step '${compensation.step_id}' has no compensate in template '${task.state.task_type}'`);
  }
  const performer = step.compensate;
  const done = task.state.steps[step.id];
  return {
    label: `compensation of step '${step.id}'`,
    ref: { compensation: index },
    performer,
    retry: step.retry,
    timeoutMs: step.timeoutMs ?? context.compensationTimeoutMs,
    envelope: (msgId, createdAtMs, target) =>
      workEnvelope(
        task,
        {
          msgId,
          createdAtMs,
          target,
          type: "compensate",
          stepId: step.id,
          capability: "capability" in performer ? performer.capability : undefined,
          payload: {
            step_id: step.id,
            agent: done.agent,
            input: stepInput(step, task.state),
            output: done.output,
            reason: task.state.error,
          },
        },
        context.inbox,
      ),
  };
}

/** What stands in a task's template for step `id`; the caller knows it is there. */
function templateStep(task: Pick<SpecSource, "template">, id: string): StepTemplate {
  return task.template!.steps.find((s) => s.id === id)!;
}

interface WorkMessage {
  msgId: string;
  createdAtMs: number;
  target: string;
  type: "query" | "compensate";
  stepId: string;
  capability?: string;
  payload: unknown;
}

/** The envelope of one attempt, answered to `replyTo` (the orchestrator's inbox). */
function workEnvelope(task: SpecSource, m: WorkMessage, replyTo: string): Envelope {
  const envelope = createEnvelope({
    msg_type: m.type,
    source: ORCHESTRATOR,
    target: m.target,
    payload: m.payload,
    trace_id: task.state.trace_id,
    priority: task.state.priority,
    max_hops: task.template?.maxHops,
    reply_to: replyTo,
    task_id: task.state.task_id,
    step_id: m.stepId,
    capability: m.target === "*" ? m.capability : undefined,
  });
  envelope.msg_id = m.msgId;
  envelope.created_at = m.createdAtMs;
  return envelope;
}
