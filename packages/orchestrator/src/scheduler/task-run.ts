import { type DeadLetters, type Envelope, newId, readEnvelope } from "@mq9/agent/internal";
import type { Priority } from "@mq9/protocol";
import { context } from "@opentelemetry/api";
import { OrchestratorError } from "../errors.js";
import { TaskTracing } from "../observability/task-tracing.js";
import type { Router } from "../routing/router.js";
import type { StepTemplate, TaskTemplate } from "../templates/task-template.js";
import { compensationsOwed, errorText, recordAttempt, retryBackoffMs } from "./attempts.js";
import { completedOutputs, mergeOutput, taskResult } from "./step-io.js";
import {
  isTerminal,
  moveTask,
  moveWork,
  type StepState,
  snapshot,
  type TaskState,
  type WorkState,
} from "./task-state.js";
import type { TaskStore } from "./task-store.js";
import { TASK_DEADLINE, TaskTimers, type TimerKey } from "./task-timers.js";
import { templateProblem } from "./template-version.js";
import type { WorkInProgress } from "./work-in-progress.js";
import type { WorkPost } from "./work-post.js";
import { compensationSpec, stepSpec, type WorkContext, type WorkSpec } from "./work-spec.js";

/** One piece of a task's work (a step or a compensation) with what it takes to dispatch it. */
interface WorkItem {
  work: WorkState;
  spec: WorkSpec;
}

/** What the runs of one scheduler share: its services and settings, and the loop they run in. */
export interface TaskRunHost {
  store: TaskStore;
  router: Router;
  deadLetters: DeadLetters;
  post: WorkPost;
  inProgress: WorkInProgress;
  workContext: WorkContext;
  /** Longest pause between retries. */
  maxBackoffMs: number;
  onStep?: (task: TaskState, step: StepState) => void;
  onFinished?: (task: TaskState) => void;
  onChange?: (task: TaskState) => void;
  now(): number;
  /** True once the scheduler closes: runs stop moving, and their problems are not reported. */
  closing(): boolean;
  report(error: Error): void;
  /** The run has (or no longer has) work waiting for an agent; the scheduler wakes it when one frees. */
  setWaiting(run: TaskRun, waits: boolean): void;
  /** An agent's work in progress dropped: a task waiting for an agent may go. */
  agentFreed(): void;
  /** The run's end was told: its place goes to the next queued task. */
  ended(run: TaskRun): void;
}

/** What a new task starts with besides its template. */
export interface NewTask {
  taskType: string;
  payload: unknown;
  priority: Priority;
  /** Joins this trace instead of starting one. */
  traceId?: string;
  now: number;
  /** It waits in the admission queue before it starts. */
  queued: boolean;
}

/** The first state of a task of `template`: every step pending. */
export function newTaskState(template: TaskTemplate, task: NewTask): TaskState {
  const { now } = task;
  const state: TaskState = {
    task_id: newId(),
    task_type: task.taskType,
    trace_id: task.traceId ?? newId(),
    status: "pending",
    priority: task.priority,
    payload: task.payload === undefined ? null : task.payload,
    created_at: now,
    updated_at: now,
    deadline: template.timeoutMs ? now + template.timeoutMs : undefined,
    order: [...template.order],
    steps: Object.fromEntries(
      template.order.map((id) => [id, { id, status: "pending", attempts: 0, history: [] } as StepState]),
    ),
    completed_order: [],
    compensations: [],
    revision: 0,
  };
  if (template.source !== undefined) state.template_source = template.source;
  if (task.queued) state.queued = true;
  return state;
}

/** The refusal to cancel a task that has ended. */
export function alreadyFinished(task: TaskState): OrchestratorError {
  return new OrchestratorError(
    "TASK_FINISHED",
    `task ${task.task_id} is already ${task.status}; only a pending or running task can be canceled`,
  );
}

/**
 * One task and every move it makes. The scheduler (the loop, admission, the waiting list)
 * asks a run to go on, take a reply, cancel or resume; each request runs in the task's own
 * chain, one at a time, and ends with `settle`, which carries the task as far as it can go,
 * persists it and tells the listeners. A new transition belongs here, next to its siblings:
 * progress (settle, advance, compensations), dispatch, outcomes (a reply, a failed attempt,
 * an early end), restart and timers. The moves a state may make are in task-state.ts.
 */
export class TaskRun {
  readonly state: TaskState;
  private version: TaskTemplate | undefined;
  private readonly timers: TaskTimers;
  /** Every change of the task runs in this chain, one at a time. */
  private chain: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<() => void>();
  private told: boolean;
  /** Steps whose end was told to onStep. */
  private readonly stepsTold: Set<string>;
  /** The task's spans (OpenTelemetry): no-ops unless the application registered an SDK. */
  private readonly tracing: TaskTracing;

  constructor(
    state: TaskState,
    template: TaskTemplate | undefined,
    private readonly host: TaskRunHost,
  ) {
    this.state = state;
    this.version = template;
    this.timers = new TaskTimers(host.now);
    this.tracing = new TaskTracing(state);
    this.told = isTerminal(state.status);
    this.stepsTold = new Set(state.order.filter((id) => isTerminal(state.steps[id].status)));
  }

  /** The template version the task runs (see templateOf); undefined when it is gone. */
  get template(): TaskTemplate | undefined {
    return this.version;
  }

  /** Whether its end was told (a task read back finished was told before the restart). */
  get announced(): boolean {
    return this.told;
  }

  /** A finished task nobody waits on and with nothing left to undo may leave memory. */
  get forgettable(): boolean {
    return this.state.compensation_status !== "running" && this.waiters.size === 0;
  }

  // ------------------------------------------------------------------------------ requests

  /** Persists the new task (accepted once stored) and arms its deadline. */
  accept(): Promise<void> {
    return this.inTurn(async () => {
      await this.host.store.save(this.state);
      if (this.state.deadline) this.armTaskDeadline();
    });
  }

  /** Moves the task as far as it can go now: it starts, or its waiting work gets another go. */
  go(): Promise<void> {
    return this.inTurn(() => this.settle());
  }

  /** Applies a reply from the inbox to the attempt it answers, and goes on from there. */
  receive(envelope: Envelope): Promise<void> {
    return this.inTurn(async () => {
      if (this.applyReply(envelope)) await this.settle();
    });
  }

  /** Cancels the task on request; its completed steps are compensated. */
  cancel(): Promise<TaskState> {
    return this.inTurn(async () => {
      if (isTerminal(this.state.status)) throw alreadyFinished(this.state);
      this.endTask("canceled", "canceled on request");
      await this.settle();
      return snapshot(this.state);
    });
  }

  /** Picks a stored task up again after a restart (see recover). */
  resume(): Promise<void> {
    return this.inTurn(() => this.recover());
  }

  /** Resolves once the task's end was told, or after `timeoutMs`. */
  async untilAnnounced(timeoutMs: number): Promise<void> {
    if (isTerminal(this.state.status) && this.told) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }

  /** Whether it may still wait for an agent: it runs, on a template. */
  get mayWait(): boolean {
    return this.version !== undefined && !isTerminal(this.state.status);
  }

  /** Whether a piece of its work that waits for an agent could be taken now. */
  couldGoOn(): boolean {
    const { state } = this;
    const ready = this.version!.steps.some((step) => {
      const st = state.steps[step.id];
      return (
        st.waiting !== undefined && step.performer !== undefined && this.host.router.couldTake(step.performer)
      );
    });
    const compensation = state.compensations.some((c) => c.waiting !== undefined);
    return ready || compensation;
  }

  /** Stops its timers; resolves once the change under way is done (the task stays stored). */
  stop(): Promise<void> {
    this.timers.clearAll();
    return this.chain;
  }

  // ------------------------------------------------------------------------------ progress

  /** Moves the task as far as it can go now, persists it, and announces its end once. */
  private async settle(): Promise<void> {
    const { host, state } = this;
    if (host.closing()) return;
    if (!isTerminal(state.status)) await this.advance();
    if (isTerminal(state.status)) await this.advanceCompensation();
    state.updated_at = host.now();
    await host.store.save(state);
    this.tracing.sync(host.now());
    host.onChange?.(snapshot(state));
    const waits =
      !isTerminal(state.status) || state.compensation_status === "running"
        ? state.order.some((id) => state.steps[id].waiting !== undefined) ||
          state.compensations.some((c) => c.waiting !== undefined)
        : false;
    host.setWaiting(this, waits);
    if (host.onStep) {
      for (const id of state.order) {
        const step = state.steps[id];
        if (!isTerminal(step.status) || this.stepsTold.has(id)) continue;
        this.stepsTold.add(id);
        host.onStep(state, step);
      }
    }
    if (isTerminal(state.status) && !this.told) this.announce();
  }

  /** Skips, merges and dispatches the steps whose dependencies are settled; completes the task when all are. */
  private async advance(): Promise<void> {
    const { state } = this;
    const template = this.version!;
    const ready: StepTemplate[] = [];
    for (let progressed = true; progressed; ) {
      progressed = false;
      ready.length = 0;
      const now = this.host.now();
      for (const step of template.steps) {
        const st = state.steps[step.id];
        if (st.status !== "pending") continue;
        if (st.retry_at !== undefined && st.retry_at > now) {
          this.armRetry(this.stepSpec(step.id), st.retry_at);
          continue;
        }
        if (!step.dependsOn.every((dep) => dependencySettled(template, state, dep))) continue;
        if (step.when) {
          let pass: boolean;
          try {
            pass = step.when.evaluate({ payload: state.payload, outputs: completedOutputs(state) });
          } catch (err) {
            st.error = `its when condition failed: ${(err as Error).message}`;
            moveWork(st, "failed", now, `step '${step.id}'`);
            if (!step.optional) this.endTask("failed", `step '${step.id}': ${st.error}`);
            progressed = true;
            break;
          }
          if (!pass) {
            moveWork(st, "skipped", now, `step '${step.id}'`);
            progressed = true;
            continue;
          }
        }
        if (step.merge) {
          const merged = mergeOutput(step, state);
          st.output = merged.output;
          if (merged.clashes) st.merge_clashes = merged.clashes;
          moveWork(st, "completed", now, `step '${step.id}'`);
          st.started_at = now;
          state.completed_order.push(step.id);
          progressed = true;
          continue;
        }
        ready.push(step);
      }
      if (isTerminal(state.status)) return;
    }
    if (ready.length > 0) {
      await this.dispatchAll(
        ready.map((step) => ({ work: state.steps[step.id] as WorkState, spec: this.stepSpec(step.id) })),
      );
    }
    if (isTerminal(state.status)) return;
    if (template.order.every((id) => isTerminal(state.steps[id].status))) {
      state.result = taskResult(template, state);
      moveTask(state, "completed", this.host.now());
    }
  }

  /** Compensations run one at a time, newest completed step first (a saga). */
  private async advanceCompensation(): Promise<void> {
    const { state } = this;
    while (state.compensation_status === "running") {
      const index = state.compensations.findIndex((c) => !isTerminal(c.status));
      if (index < 0) {
        state.compensation_status = state.compensations.every((c) => c.status === "completed")
          ? "completed"
          : "failed";
        return;
      }
      const compensation = state.compensations[index];
      if (compensation.status !== "pending") return;
      const spec = this.compensationSpec(index);
      if (compensation.retry_at !== undefined && compensation.retry_at > this.host.now()) {
        this.armRetry(spec, compensation.retry_at);
        return;
      }
      await this.dispatchAll([{ work: compensation, spec }]);
      if (!isTerminal(compensation.status)) return;
    }
  }

  /** Tells the end of the task once: its deadline goes, the listeners and waiters hear of it. */
  private announce(): void {
    this.told = true;
    this.timers.clear(TASK_DEADLINE);
    this.host.router.forgetTrace(this.state.trace_id);
    this.host.onFinished?.(snapshot(this.state));
    for (const wake of [...this.waiters]) wake();
    this.host.ended(this);
  }

  // ------------------------------------------------------------------------------ dispatch

  /**
   * Routes each piece of work, writes the dispatches to the task state before sending
   * anything (so a restart knows what may be in flight), then sends them in parallel.
   */
  private async dispatchAll(items: WorkItem[]): Promise<void> {
    const { host, state } = this;
    const sends: (WorkItem & { envelope: Envelope; mailbox: string })[] = [];
    for (const { work, spec } of items) {
      // An earlier item's final failure may have ended the task and canceled this one.
      if (work.status !== "pending") continue;
      const now = host.now();
      const performer = spec.performer;
      const target = "agent" in performer ? performer.agent : "*";
      const envelope = spec.envelope(newId(), now, target);
      const decision = await host.router.decide(envelope, { fallback: false });
      if ("reason" in decision && (decision.kind === "unavailable" || decision.kind === "at_capacity")) {
        // Mailboxes exist so that work can wait for an agent that is not there yet.
        this.waitForAgent(work, spec, decision.reason);
        continue;
      }
      this.timers.clear({ kind: "wait", work: spec.ref });
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = now;
      work.started_at ??= now;
      work.retry_at = undefined;
      if ("reason" in decision) {
        const letter = await host.deadLetters.put(decision.reason, { envelope });
        host.router.reportDead(letter, decision.kind);
        this.attemptFailed(work, spec, "failed", `no agent could take it: ${decision.reason}`);
        continue;
      }
      const agent = decision.agent;
      host.router.noteRouted(decision.layer, envelope, agent);
      work.dispatch = { msg_id: envelope.msg_id, agent: agent.name, mailbox: agent.mailbox, created_at: now };
      (work as StepState).agent = agent.name;
      moveWork(work, "dispatching", now, spec.label);
      // Counted into the agent's load before anything is awaited, so no other task's decision
      // can see the agent's room that this dispatch has taken (the per-agent limit holds).
      host.inProgress.track(work, envelope.trace_id, envelope.hops);
      sends.push({ work, spec, envelope: { ...envelope, target: agent.name }, mailbox: agent.mailbox });
    }
    const live = sends.filter((s) => inFlight(s.work, s.envelope.msg_id));
    if (live.length === 0) return;
    if (state.status === "pending") moveTask(state, "dispatching", host.now());
    try {
      await host.store.save(state);
    } catch (err) {
      for (const { work } of live) this.release(work);
      throw err;
    }
    await Promise.all(
      live.map(async ({ work, spec, envelope, mailbox }) => {
        try {
          // In the hop's context: the message carries it to the agent, whose spans follow.
          const hop = this.tracing.hop(work, envelope.target, envelope.msg_id, host.now());
          await context.with(hop, () => host.post.send(mailbox, envelope));
        } catch (err) {
          if (inFlight(work, envelope.msg_id)) {
            this.attemptFailed(work, spec, "failed", `could not send it: ${(err as Error).message}`);
          }
          return;
        }
        if (!inFlight(work, envelope.msg_id)) return;
        moveWork(work, "running", host.now(), spec.label);
        this.armAttemptDeadline(work, spec);
      }),
    );
    if (state.status === "dispatching" || state.status === "pending") {
      if (Object.values(state.steps).some((s) => s.status === "running"))
        moveTask(state, "running", host.now());
    }
  }

  /**
   * Nobody can take the work right now: it stays pending and waits for an agent (woken by
   * the scheduler) until its timeout, counted from when it started waiting; without a step
   * timeout it waits as long as the task may run.
   */
  private waitForAgent(work: WorkState, spec: WorkSpec, reason: string): void {
    work.waiting = reason;
    work.waiting_since ??= this.host.now();
    this.host.setWaiting(this, true);
    const timeoutMs = spec.timeoutMs;
    if (timeoutMs === undefined) return;
    const since = work.waiting_since;
    this.arm({ kind: "wait", work: spec.ref }, since + timeoutMs, () => {
      if (work.status !== "pending" || work.waiting === undefined) return false;
      const why = work.waiting;
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = since;
      work.started_at ??= since;
      this.attemptFailed(work, spec, "timeout", `no agent took it within ${timeoutMs} ms (${why})`);
      return true;
    });
  }

  // ------------------------------------------------------------------------------ outcomes

  /** Applies an answer to the attempt it answers; false when it answers nothing in flight. */
  private applyReply(envelope: Envelope): boolean {
    if (envelope.msg_type !== "result" && envelope.msg_type !== "error") return false;
    const { state } = this;
    const now = () => this.host.now();
    const step = envelope.step_id ? state.steps[envelope.step_id] : undefined;
    if (step && inFlight(step, envelope.in_reply_to)) {
      this.release(step);
      const spec = this.stepSpec(step.id);
      this.timers.clear({ kind: "attempt-deadline", work: spec.ref });
      if (envelope.msg_type === "result") {
        recordAttempt(step, "completed", now());
        step.output = envelope.payload;
        step.error = undefined;
        moveWork(step, "completed", now(), spec.label);
        state.completed_order.push(step.id);
      } else {
        this.attemptFailed(step, spec, "failed", errorText(envelope.payload));
      }
      return true;
    }
    const index = state.compensations.findIndex((c) => inFlight(c, envelope.in_reply_to));
    if (index < 0) return false;
    const compensation = state.compensations[index];
    this.release(compensation);
    const spec = this.compensationSpec(index);
    this.timers.clear({ kind: "attempt-deadline", work: spec.ref });
    if (envelope.msg_type === "result") {
      recordAttempt(compensation, "completed", now());
      compensation.output = envelope.payload;
      moveWork(compensation, "completed", now(), spec.label);
    } else {
      this.attemptFailed(compensation, spec, "failed", errorText(envelope.payload));
    }
    return true;
  }

  /** Records a failed attempt; retries after a backoff while attempts remain, else ends the work. */
  private attemptFailed(
    work: WorkState,
    spec: WorkSpec,
    outcome: "failed" | "timeout",
    reason: string,
  ): void {
    const now = this.host.now();
    recordAttempt(work, outcome, this.host.now(), reason);
    this.timers.clear({ kind: "attempt-deadline", work: spec.ref });
    this.release(work);
    if (work.dispatch && outcome === "timeout") this.host.post.cancel(this.state, work.dispatch);
    work.dispatch = undefined;
    work.deadline = undefined;
    work.error = reason;
    if (work.attempts <= spec.retry.count) {
      moveWork(work, "pending", now, spec.label);
      work.retry_at = now + retryBackoffMs(spec.retry, work.attempts, this.host.maxBackoffMs);
      this.armRetry(spec, work.retry_at);
      return;
    }
    moveWork(work, outcome, now, spec.label);
    const step = "id" in work ? this.version?.steps.find((s) => s.id === (work as StepState).id) : undefined;
    if (step && !step.optional && !isTerminal(this.state.status)) {
      this.endTask(
        outcome === "timeout" ? "timeout" : "failed",
        `step '${step.id}' ${outcome === "timeout" ? "timed out" : "failed"}: ${reason}`,
      );
    }
  }

  /** Ends a task early: stops its steps and lines up the compensations of what completed. */
  private endTask(status: "failed" | "timeout" | "canceled", reason: string): void {
    const { state } = this;
    const now = this.host.now();
    moveTask(state, status, now);
    state.error = reason;
    this.timers.clear(TASK_DEADLINE);
    for (const id of state.order) {
      const step = state.steps[id];
      if (isTerminal(step.status)) continue;
      if (step.dispatch && (step.status === "running" || step.status === "dispatching")) {
        this.release(step);
        this.host.post.cancel(state, step.dispatch);
        recordAttempt(step, "canceled", now, reason);
      }
      this.timers.clearWork({ step: id });
      step.waiting = undefined;
      step.error ??= status === "canceled" ? "the task was canceled" : `the task ended: ${reason}`;
      moveWork(step, "canceled", now, `step '${id}'`);
    }
    state.compensations = compensationsOwed(state, this.version);
    if (state.compensations.length > 0) state.compensation_status = "running";
  }

  /** The dispatch of `work` ended: its agent's work in progress drops. */
  private release(work: WorkState): void {
    if (this.host.inProgress.release(work)) this.host.agentFreed();
  }

  // ------------------------------------------------------------------------------ restart

  /**
   * Picks a stored task up again. Work whose dispatch was written but maybe not sent
   * is looked up in the agent's mailbox by its key and sent only if it is not there;
   * work in flight looks for its reply in the inbox. Nothing runs twice.
   */
  private async recover(): Promise<void> {
    const { state } = this;
    const unfinished = !isTerminal(state.status);
    if (!unfinished && state.compensation_status !== "running") return;
    const problem = templateProblem(state, this.version);
    if (problem) {
      if (unfinished) {
        this.version = undefined;
        this.endTask("failed", problem);
      } else {
        state.compensation_status = "failed";
        state.error = `${state.error ?? ""}; compensation stopped: ${problem}`;
      }
      await this.settle();
      return;
    }
    for (const { work, spec } of this.workOf(unfinished)) {
      if (work.dispatch && (work.status === "dispatching" || work.status === "running"))
        await this.recoverAttempt(work, spec);
    }
    if (unfinished && state.deadline) this.armTaskDeadline();
    await this.settle();
  }

  /** One attempt that was in flight when the scheduler stopped. */
  private async recoverAttempt(work: WorkState, spec: WorkSpec): Promise<void> {
    const { host } = this;
    const dispatch = work.dispatch!;
    if (work.status === "dispatching") {
      if (!(await host.post.isPosted(dispatch))) {
        try {
          await host.post.send(
            dispatch.mailbox,
            spec.envelope(dispatch.msg_id, dispatch.created_at, dispatch.agent),
          );
        } catch (err) {
          this.attemptFailed(work, spec, "failed", `could not send it: ${(err as Error).message}`);
          return;
        }
      }
      moveWork(work, "running", host.now(), spec.label);
    }
    host.inProgress.track(work, this.state.trace_id, 0);
    const reply = await host.post.storedReply(dispatch);
    if (reply) {
      try {
        if (this.applyReply(readEnvelope(reply))) return;
      } catch (err) {
        host.report(err as Error);
      }
    }
    this.armAttemptDeadline(work, spec);
  }

  /** Every piece of work with its spec: the steps (while the task runs), then the compensations. */
  private workOf(withSteps: boolean): WorkItem[] {
    const { state } = this;
    const work: WorkItem[] = [];
    if (withSteps) {
      for (const id of state.order) work.push({ work: state.steps[id], spec: this.stepSpec(id) });
    }
    state.compensations.forEach((c, i) => {
      work.push({ work: c, spec: this.compensationSpec(i) });
    });
    return work;
  }

  private stepSpec(id: string): WorkSpec {
    return stepSpec(this, id, this.host.workContext);
  }

  private compensationSpec(index: number): WorkSpec {
    return compensationSpec(this, index, this.host.workContext);
  }

  // ------------------------------------------------------------------------------ timers

  private armAttemptDeadline(work: WorkState, spec: WorkSpec): void {
    if (spec.timeoutMs === undefined) return;
    work.deadline ??= this.host.now() + spec.timeoutMs;
    const msgId = work.dispatch?.msg_id;
    this.arm({ kind: "attempt-deadline", work: spec.ref }, work.deadline, () => {
      if (!inFlight(work, msgId)) return false;
      this.attemptFailed(work, spec, "timeout", `no answer within ${spec.timeoutMs} ms`);
      return true;
    });
  }

  private armRetry(spec: WorkSpec, at: number): void {
    this.arm({ kind: "retry", work: spec.ref }, at, () => true);
  }

  private armTaskDeadline(): void {
    const { state } = this;
    this.arm(TASK_DEADLINE, state.deadline!, () => {
      if (isTerminal(state.status)) return false;
      const seconds = ((state.deadline! - state.created_at) / 1000).toString();
      this.endTask("timeout", `the task did not finish within its timeout of ${seconds} s`);
      return true;
    });
  }

  /** Runs `fire` in the task's chain at `at`; when it reports a change, the task is settled. */
  private arm(key: TimerKey, at: number, fire: () => boolean): void {
    this.timers.arm(key, at, () => {
      if (this.host.closing()) return;
      void this.inTurn(async () => {
        if (fire()) await this.settle();
      });
    });
  }

  /** Runs `work` after everything already queued for the task. */
  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = this.chain.then(work);
    this.chain = result.then(
      () => undefined,
      (err: Error) => {
        if (!(err instanceof OrchestratorError)) this.host.report(err);
      },
    );
    return result;
  }
}

/** Whether `work` has the attempt `msgId` in flight. */
function inFlight(work: WorkState, msgId: string | undefined): boolean {
  return (
    (work.status === "running" || work.status === "dispatching") &&
    work.dispatch !== undefined &&
    work.dispatch.msg_id === msgId
  );
}

/** Whether a dependency no longer holds its dependents back. */
function dependencySettled(template: TaskTemplate, state: TaskState, id: string): boolean {
  const status = state.steps[id].status;
  if (status === "completed" || status === "skipped") return true;
  const optional = template.steps.find((s) => s.id === id)?.optional ?? false;
  return optional && isTerminal(status);
}
