import { currentTracer } from "@mq9/client";
import { isTraceId } from "@mq9/protocol";
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import { isTerminal, type StepStatus, type TaskState, type WorkState } from "../scheduler/task-state.js";

/**
 * Spans go wherever the application registered an SDK (mq9 serve: the broker's OTLP export), and
 * nowhere without one.
 */
const tracer = currentTracer("@mq9/orchestrator");

/**
 * The context a task's spans descend from: the envelope's trace id, so that the dashboard's task
 * timeline and an OTLP backend name the same trace. OpenTelemetry makes span ids itself, so the
 * parent is a remote span that is never exported, its id taken from the trace id.
 */
function taskParent(traceId: string): Context {
  if (!isTraceId(traceId)) return ROOT_CONTEXT;
  const low = traceId.slice(16);
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId: /^0+$/.test(low) ? traceId.slice(0, 16) : low,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

function workName(work: WorkState): string {
  if ("step_id" in work) return `compensate ${String(work.step_id)}`;
  return `step ${String((work as { id?: string }).id)}`;
}

function failed(status: StepStatus): boolean {
  return status === "failed" || status === "timeout" || status === "canceled";
}

/**
 * A task's spans: the task, each step (and compensation) as its child, each attempt sent to an
 * agent (a hop) as the step's child, sent in the hop's context so the agent's spans follow. Times
 * are the task state's own, as the dashboard's timeline shows them. Spans live in memory: a task
 * picked up again after a restart traces from there on.
 */
export class TaskTracing {
  private task: Span | undefined;
  /** The task span has ended (or the task had, and was done with, before this run knew it). */
  private ended: boolean;
  private readonly work = new Map<WorkState, Span>();
  private readonly hops = new Map<WorkState, { span: Span; attempt: number }>();
  /** Steps whose span has ended (or that ended before this run knew them). */
  private readonly done = new Set<string>();

  constructor(private readonly state: TaskState) {
    this.ended = isTerminal(state.status) && state.compensation_status !== "running";
    for (const id of state.order) if (isTerminal(state.steps[id].status)) this.done.add(id);
  }

  /** Starts the hop of an attempt about to be sent; returns the context to send it in. */
  hop(work: WorkState, agent: string, msgId: string, now: number): Context {
    this.hops.get(work)?.span.end(now);
    const parent = trace.setSpan(ROOT_CONTEXT, this.workSpan(work, now));
    const attributes: Attributes = {
      "mq9.agent": agent,
      "mq9.hop.attempt": work.attempts,
      "messaging.message.id": msgId,
    };
    const span = tracer().startSpan(
      `hop ${workName(work).replace(/^\S+ /, "")} → ${agent}`,
      { kind: SpanKind.INTERNAL, startTime: now, attributes },
      parent,
    );
    this.hops.set(work, { span, attempt: work.attempts });
    return trace.setSpan(ROOT_CONTEXT, span);
  }

  /**
   * Ends what the state says has ended: hops whose attempt is recorded, steps that finished
   * (a skipped or merged step, never sent, gets its span here), and the task once nothing of it
   * runs any more.
   */
  sync(now: number): void {
    const { state } = this;
    for (const [work, hop] of this.hops) {
      const record = work.history.find((r) => r.attempt === hop.attempt);
      if (!record) continue;
      hop.span.setAttribute("mq9.hop.outcome", record.outcome);
      if (record.outcome !== "completed") {
        hop.span.setStatus({ code: SpanStatusCode.ERROR, message: record.error ?? record.outcome });
      }
      hop.span.end(record.finished_at);
      this.hops.delete(work);
    }
    for (const id of state.order) {
      const step = state.steps[id];
      if (isTerminal(step.status) && !this.done.has(id)) {
        this.done.add(id);
        this.endWork(step, now);
      }
    }
    for (const compensation of state.compensations) {
      if (isTerminal(compensation.status) && this.work.has(compensation)) this.endWork(compensation, now);
    }
    if (
      !this.ended &&
      isTerminal(state.status) &&
      state.compensation_status !== "running" &&
      this.hops.size === 0
    ) {
      this.ended = true;
      const task = this.taskSpan(now);
      task.setAttribute("mq9.task.status", state.status);
      if (state.status !== "completed") {
        task.setStatus({ code: SpanStatusCode.ERROR, message: state.error ?? state.status });
      }
      task.end(state.finished_at ?? now);
      this.task = undefined;
    }
  }

  private taskSpan(now: number): Span {
    if (this.task === undefined) {
      const { state } = this;
      this.task = tracer().startSpan(
        `task ${state.task_type}`,
        {
          kind: SpanKind.INTERNAL,
          startTime: Math.min(state.created_at, now),
          attributes: {
            "mq9.task.id": state.task_id,
            "mq9.task.type": state.task_type,
            "mq9.trace_id": state.trace_id,
          },
        },
        taskParent(state.trace_id),
      );
    }
    return this.task;
  }

  private workSpan(work: WorkState, now: number): Span {
    let span = this.work.get(work);
    if (span === undefined) {
      const attributes: Attributes = {};
      if ("id" in work) attributes["mq9.step.id"] = String(work.id);
      if ("step_id" in work) attributes["mq9.step.id"] = String(work.step_id);
      span = tracer().startSpan(
        workName(work),
        { kind: SpanKind.INTERNAL, startTime: work.started_at ?? now, attributes },
        trace.setSpan(ROOT_CONTEXT, this.taskSpan(now)),
      );
      this.work.set(work, span);
    }
    return span;
  }

  private endWork(work: WorkState, now: number): void {
    const span = this.workSpan(work, work.started_at ?? work.finished_at ?? now);
    span.setAttribute("mq9.step.status", work.status);
    const agent = (work as { agent?: string }).agent;
    if (agent) span.setAttribute("mq9.agent", agent);
    if (failed(work.status))
      span.setStatus({ code: SpanStatusCode.ERROR, message: work.error ?? work.status });
    span.end(work.finished_at ?? now);
    this.work.delete(work);
  }
}
