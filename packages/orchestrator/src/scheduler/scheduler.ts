import type { DeadLetters } from "@mq9/agent/internal";
import {
  type BusNames,
  controlMailbox,
  createEnvelope,
  type Envelope,
  EnvelopeError,
  isTaskPriority,
  mq9Priority,
  newId,
  PRIORITY_HELP,
  queryKey,
  readEnvelope,
  replyKey,
  sendEnvelope,
  type TaskPriority,
  TraceMemory,
} from "@mq9/agent/internal";
import { type ConsumedMessage, type Consumer, type Mq9Client, Mq9Error } from "@mq9/client";
import { OrchestratorError } from "../errors.js";
import type { Router } from "../routing/router.js";
import type {
  Performer,
  RetryPolicy,
  StepTemplate,
  TaskTemplate,
  TemplateProblem,
} from "../templates/task-template.js";
import { parseTemplate } from "../templates/template-loader.js";
import { completedOutputs, mergeOutput, stepInput, taskResult } from "./step-io.js";
import {
  type CompensationState,
  type Dispatch,
  isTerminal,
  moveTask,
  moveWork,
  type StepState,
  type TaskState,
  type TaskStatus,
  type WorkState,
} from "./task-state.js";
import type { TaskStore } from "./task-store.js";

/** Where the scheduler finds task templates (a TemplateSet, or anything with `get`). */
export interface TemplateLookup {
  get(name: string): TaskTemplate | undefined;
  names(): string[];
  /** Problems of the last load, when the templates come from files. */
  problems?(): TemplateProblem[];
}

export interface SchedulerOptions {
  client: Mq9Client;
  names: BusNames;
  templates: TemplateLookup;
  router: Router;
  store: TaskStore;
  deadLetters: DeadLetters;
  /** Seconds a trace's memory mailbox lives (default a day, or the task timeout plus an hour if longer). */
  memoryTtlSeconds?: number;
  /** Seconds dispatched messages are kept in agents' mailboxes (default 7 days). */
  messageTtlSeconds?: number;
  /** Timeout of one compensation attempt when its step has none (default 30 000). */
  compensationTimeoutMs?: number;
  /** Longest pause between retries (default 60 000). */
  maxBackoffMs?: number;
  /**
   * Lease of fetched replies (default 5 000): a reply fetched by an orchestrator that stopped
   * before handling it is delivered again after this long.
   */
  inboxLeaseMs?: number;
  /** Finished tasks kept in memory for the API; older ones are read from mq9 (default 10 000). */
  maxFinishedInMemory?: number;
  /** Tasks run at once; later ones wait in the queue, pending (default 10 000). */
  maxTasksInFlight?: number;
  /** Tasks that may wait in the queue; beyond it submit is refused with QUEUE_FULL (default 10 000). */
  queueCapacity?: number;
  /** Replies per FETCH of the orchestrator's inbox (default 100). */
  pollBatch?: number;
  /** Longest wait of one FETCH of the inbox when it is empty (default 2 000). */
  pollTimeoutMs?: number;
  /** Told when a step ends (metrics and logs). */
  onStep?: (task: TaskState, step: StepState) => void;
  /** Told once when a task ends (completed, failed, timeout, canceled). */
  onFinished?: (task: TaskState) => void;
  /** Told after every change of a task (for live views). */
  onChange?: (task: TaskState) => void;
  onError?: (error: Error) => void;
  now?: () => number;
}

export interface SubmitOptions {
  priority?: TaskPriority;
  /** Join an existing trace instead of starting one. */
  traceId?: string;
}

interface TaskRecord {
  state: TaskState;
  template?: TaskTemplate;
  timers: Map<string, NodeJS.Timeout>;
  /** Every change of a task runs in this chain, one at a time. */
  queue: Promise<void>;
  waiters: Set<() => void>;
  announced: boolean;
  /** Steps whose end was told to onStep. */
  stepsTold: Set<string>;
}

/** What one unit of work (a step, or the compensation of one) needs to be dispatched and retried. */
interface WorkSpec {
  label: string;
  /** Timer key suffix. */
  key: string;
  performer: Performer;
  retry: RetryPolicy;
  timeoutMs?: number;
  envelope(msgId: string, createdAt: number, target: string): Envelope;
}

const ORCHESTRATOR = "orchestrator";

function errorText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  const error = (payload as { error?: unknown } | null)?.error;
  if (typeof error === "string") return error;
  return JSON.stringify(payload) ?? "the agent answered with an error";
}

const snapshot = (state: TaskState): TaskState => structuredClone(state);

/**
 * Runs tasks from their templates: a pipeline, a fan-out or a DAG. Steps are
 * dispatched to agents through the router and answered in the orchestrator's inbox;
 * timeouts, retries with backoff, optional steps, `when` conditions, merges and the
 * saga's compensations are driven from the task state, which is written to mq9
 * before every dispatch, so a restarted scheduler resumes without running a step twice.
 */
export class Scheduler {
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly finishedOrder: string[] = [];
  /** Tasks with a step waiting for an agent; woken when the registry or an agent's load changes. */
  private readonly waiting = new Set<TaskRecord>();
  /** Accepted tasks not started yet, oldest first. */
  private readonly queue: TaskRecord[] = [];
  /** Started and not finished. */
  private running = 0;
  /** Dispatches counted into an agent's work in progress, by msg_id: released once, when they end. */
  private readonly tracked = new Map<string, { agent: string; at: number; ahead: number }>();
  private inbox?: Consumer;
  private closing = false;
  private readonly now: () => number;
  private readonly messageTtl: number;

  constructor(private readonly o: SchedulerOptions) {
    this.now = o.now ?? Date.now;
    this.messageTtl = o.messageTtlSeconds ?? 7 * 86_400;
  }

  /** Loads the stored tasks, resumes the unfinished ones, then takes replies from the inbox. */
  async start(): Promise<void> {
    const stored = await this.o.store.loadAll();
    const records = stored.map((state) => this.adopt(state));
    const queued = records.filter((r) => r.state.queued && !isTerminal(r.state.status));
    queued.sort((a, b) => a.state.created_at - b.state.created_at);
    this.queue.push(...queued);
    const started = records.filter((r) => !r.state.queued);
    this.running = started.filter((r) => !isTerminal(r.state.status)).length;
    await Promise.all(started.map((record) => this.run(record, () => this.resume(record))));
    this.admit();
    this.inbox = this.o.client.consume(this.o.names.inbox, (m) => this.take(m), {
      group: ORCHESTRATOR,
      deliver: "earliest",
      batch: this.o.pollBatch ?? 100,
      maxWaitMs: this.o.pollTimeoutMs ?? 2_000,
      concurrency: 32,
      leaseMs: this.o.inboxLeaseMs ?? 5_000,
      onError: (error) => this.report(error),
    });
  }

  /** Stops taking replies and clears timers; tasks stay persisted for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    await this.inbox?.stop();
    for (const record of this.tasks.values()) {
      for (const timer of record.timers.values()) clearTimeout(timer);
      record.timers.clear();
    }
    await Promise.all([...this.tasks.values()].map((r) => r.queue));
  }

  /** Starts a task from its template; resolves once it is persisted, with its first state. */
  async submit(taskType: string, payload: unknown, options: SubmitOptions = {}): Promise<TaskState> {
    if (typeof taskType !== "string" || taskType === "") {
      throw new OrchestratorError("INVALID_REQUEST", "task_type must be a non-empty string");
    }
    const template = this.o.templates.get(taskType);
    if (!template) {
      const known = this.o.templates.names();
      throw new OrchestratorError(
        "UNKNOWN_TASK_TYPE",
        `unknown task type '${taskType}'; known types: ${known.length ? known.join(", ") : "none (no templates are loaded)"}`,
      );
    }
    const max = this.o.maxTasksInFlight ?? 10_000;
    const full = this.running >= max;
    const capacity = this.o.queueCapacity ?? 10_000;
    if (full && this.queue.length >= capacity) {
      throw new OrchestratorError(
        "QUEUE_FULL",
        `the orchestrator runs ${this.running} tasks (maxTasksInFlight ${max}) and ${this.queue.length} wait (queueCapacity ${capacity}); try again later`,
        { retryAfterSeconds: 1 },
      );
    }
    const asked = options.priority ?? "normal";
    if (!isTaskPriority(asked)) throw new OrchestratorError("INVALID_REQUEST", PRIORITY_HELP);
    const priority = mq9Priority(asked);
    const now = this.now();
    const state: TaskState = {
      task_id: newId(),
      task_type: taskType,
      trace_id: options.traceId ?? newId(),
      status: "pending",
      priority,
      payload: payload === undefined ? null : payload,
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
    if (full) state.queued = true;
    const memoryTtl = Math.max(
      this.o.memoryTtlSeconds ?? 86_400,
      template.timeoutMs ? Math.ceil(template.timeoutMs / 1000) + 3_600 : 0,
    );
    await new TraceMemory(this.o.client, state.trace_id, { names: this.o.names, ttlSeconds: memoryTtl }).set(
      "payload",
      state.payload,
    );
    const record = this.adopt(state, template);
    try {
      await this.run(record, async () => {
        await this.o.store.save(state);
        if (state.deadline) this.armTaskDeadline(record);
      });
    } catch (err) {
      // Not persisted, so not accepted.
      this.tasks.delete(state.task_id);
      throw err;
    }
    if (full) this.queue.push(record);
    else {
      this.running++;
      void this.run(record, () => this.settle(record));
    }
    return snapshot(state);
  }

  /** Tasks held in memory, by status (no copies: the metrics ask often). */
  countByStatus(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { state } of this.tasks.values()) counts[state.status] = (counts[state.status] ?? 0) + 1;
    return counts;
  }

  /** Tasks queued and tasks running (what the metrics show). */
  get depth(): { queued: number; running: number; waiting: number } {
    return { queued: this.queue.length, running: this.running, waiting: this.waiting.size };
  }

  /** Starts queued tasks while there is room. */
  private admit(): void {
    const max = this.o.maxTasksInFlight ?? 10_000;
    while (this.running < max && this.queue.length > 0 && !this.closing) {
      const record = this.queue.shift()!;
      if (isTerminal(record.state.status)) continue;
      this.running++;
      record.state.queued = undefined;
      void this.run(record, () => this.settle(record));
    }
  }

  /**
   * Gives tasks waiting for an agent another go when one of their steps could be taken
   * now. Called after each read of the registry and when an agent's work in progress drops.
   */
  wakeWaiting(limit = Number.POSITIVE_INFINITY): void {
    let woken = 0;
    for (const record of this.waiting) {
      if (woken >= limit) return;
      const template = record.template;
      if (!template || isTerminal(record.state.status)) {
        this.waiting.delete(record);
        continue;
      }
      const ready = template.steps.some((step) => {
        const st = record.state.steps[step.id];
        return (
          st.waiting !== undefined && step.performer !== undefined && this.o.router.couldTake(step.performer)
        );
      });
      const compensation = record.state.compensations.some((c) => c.waiting !== undefined);
      if (!ready && !compensation) continue;
      woken++;
      this.waiting.delete(record);
      void this.run(record, () => this.settle(record));
    }
  }

  /** A task's state, from memory or from mq9. */
  async get(taskId: string): Promise<TaskState | undefined> {
    const record = this.tasks.get(taskId);
    if (record) return snapshot(record.state);
    return this.o.store.load(taskId);
  }

  /** Tasks in memory (every unfinished one and the most recent finished ones), newest first. */
  list(status?: TaskStatus): TaskState[] {
    return [...this.tasks.values()]
      .map((r) => r.state)
      .filter((s) => status === undefined || s.status === status)
      .sort((a, b) => b.created_at - a.created_at)
      .map(snapshot);
  }

  /** Cancels a pending or running task; its completed steps are compensated. */
  async cancel(taskId: string): Promise<TaskState> {
    const record = this.tasks.get(taskId);
    if (!record) {
      const stored = await this.o.store.load(taskId);
      if (stored) {
        throw new OrchestratorError(
          "TASK_FINISHED",
          `task ${taskId} is already ${stored.status}; only a pending or running task can be canceled`,
        );
      }
      throw new OrchestratorError("TASK_NOT_FOUND", `no task ${taskId}; list tasks with GET /api/tasks`);
    }
    return this.run(record, async () => {
      const { state } = record;
      if (isTerminal(state.status)) {
        throw new OrchestratorError(
          "TASK_FINISHED",
          `task ${taskId} is already ${state.status}; only a pending or running task can be canceled`,
        );
      }
      this.endTask(record, "canceled", "canceled on request");
      await this.settle(record);
      return snapshot(state);
    });
  }

  /** Resolves with the task once it has ended, or with its state so far after `timeoutMs`. */
  async wait(taskId: string, timeoutMs: number): Promise<TaskState> {
    const record = this.tasks.get(taskId);
    if (!record) {
      const stored = await this.o.store.load(taskId);
      if (!stored) throw new OrchestratorError("TASK_NOT_FOUND", `no task ${taskId}`);
      return stored;
    }
    if (!(isTerminal(record.state.status) && record.announced)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          record.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        record.waiters.add(done);
      });
    }
    return snapshot(record.state);
  }

  // ------------------------------------------------------------------------------------ inbox

  private async take(delivery: ConsumedMessage): Promise<void> {
    let envelope: Envelope;
    try {
      envelope = readEnvelope(delivery);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      await this.o.deadLetters.put(`malformed envelope in the orchestrator inbox: ${err.message}`, {
        raw: delivery.text(),
      });
      return;
    }
    const record = envelope.task_id ? this.tasks.get(envelope.task_id) : undefined;
    if (!record || !envelope.in_reply_to) return;
    await this.run(record, async () => {
      if (this.applyReply(record, envelope)) await this.settle(record);
    });
  }

  /** Applies an answer to the attempt it answers; false when it answers nothing in flight. */
  private applyReply(record: TaskRecord, envelope: Envelope): boolean {
    if (envelope.msg_type !== "result" && envelope.msg_type !== "error") return false;
    const { state } = record;
    const step = envelope.step_id ? state.steps[envelope.step_id] : undefined;
    if (step && this.inFlight(step, envelope.in_reply_to)) {
      this.release(step);
      const spec = this.stepSpec(record, step.id);
      this.clearTimer(record, `deadline:${spec.key}`);
      if (envelope.msg_type === "result") {
        this.recordAttempt(step, "completed");
        step.output = envelope.payload;
        step.error = undefined;
        moveWork(step, "completed", this.now(), spec.label);
        state.completed_order.push(step.id);
      } else {
        this.attemptFailed(record, step, spec, "failed", errorText(envelope.payload));
      }
      return true;
    }
    const index = state.compensations.findIndex((c) => this.inFlight(c, envelope.in_reply_to));
    if (index < 0) return false;
    const compensation = state.compensations[index];
    this.release(compensation);
    const spec = this.compensationSpec(record, index);
    this.clearTimer(record, `deadline:${spec.key}`);
    if (envelope.msg_type === "result") {
      this.recordAttempt(compensation, "completed");
      compensation.output = envelope.payload;
      moveWork(compensation, "completed", this.now(), spec.label);
    } else {
      this.attemptFailed(record, compensation, spec, "failed", errorText(envelope.payload));
    }
    return true;
  }

  /** The dispatch of `work` ended: its agent's work in progress drops, and a waiting task may go. */
  private release(work: WorkState): void {
    const msgId = work.dispatch?.msg_id;
    if (msgId === undefined) return;
    const sent = this.tracked.get(msgId);
    if (sent === undefined) return;
    this.tracked.delete(msgId);
    this.o.router.answered(sent.agent, this.now() - sent.at, sent.ahead);
    if (this.waiting.size > 0) queueMicrotask(() => this.wakeWaiting(1));
  }

  private track(work: WorkState, traceId: string, hops: number): void {
    const dispatch = work.dispatch!;
    if (this.tracked.has(dispatch.msg_id)) return;
    const ahead = this.o.router.loadOf(dispatch.agent);
    this.tracked.set(dispatch.msg_id, { agent: dispatch.agent, at: this.now(), ahead });
    this.o.router.noteSent(dispatch.agent, traceId, hops);
  }

  private inFlight(work: WorkState, msgId: string | undefined): boolean {
    return (
      (work.status === "running" || work.status === "dispatching") &&
      work.dispatch !== undefined &&
      work.dispatch.msg_id === msgId
    );
  }

  // ------------------------------------------------------------------------------ progress

  /** Moves a task as far as it can go now, persists it, and announces its end once. */
  private async settle(record: TaskRecord): Promise<void> {
    if (this.closing) return;
    if (!isTerminal(record.state.status)) await this.advance(record);
    if (isTerminal(record.state.status)) await this.advanceCompensation(record);
    record.state.updated_at = this.now();
    await this.o.store.save(record.state);
    this.o.onChange?.(snapshot(record.state));
    const { state } = record;
    const waits =
      !isTerminal(state.status) || state.compensation_status === "running"
        ? state.order.some((id) => state.steps[id].waiting !== undefined) ||
          state.compensations.some((c) => c.waiting !== undefined)
        : false;
    if (waits) this.waiting.add(record);
    else this.waiting.delete(record);
    if (this.o.onStep) {
      for (const id of state.order) {
        const step = state.steps[id];
        if (!isTerminal(step.status) || record.stepsTold.has(id)) continue;
        record.stepsTold.add(id);
        this.o.onStep(state, step);
      }
    }
    if (isTerminal(record.state.status) && !record.announced) this.announce(record);
  }

  private async advance(record: TaskRecord): Promise<void> {
    const { state } = record;
    const template = record.template!;
    const ready: StepTemplate[] = [];
    for (let progressed = true; progressed; ) {
      progressed = false;
      ready.length = 0;
      const now = this.now();
      for (const step of template.steps) {
        const st = state.steps[step.id];
        if (st.status !== "pending") continue;
        if (st.retry_at !== undefined && st.retry_at > now) {
          this.armRetry(record, this.stepSpec(record, step.id), st.retry_at);
          continue;
        }
        if (!step.dependsOn.every((dep) => this.settled(template, state, dep))) continue;
        if (step.when) {
          let pass: boolean;
          try {
            pass = step.when.evaluate({ payload: state.payload, outputs: completedOutputs(state) });
          } catch (err) {
            st.error = `its when condition failed: ${(err as Error).message}`;
            moveWork(st, "failed", now, `step '${step.id}'`);
            if (!step.optional) this.endTask(record, "failed", `step '${step.id}': ${st.error}`);
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
          st.output = mergeOutput(step, state);
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
        record,
        ready.map((step) => ({
          work: state.steps[step.id] as WorkState,
          spec: this.stepSpec(record, step.id),
        })),
      );
    }
    if (isTerminal(state.status)) return;
    if (template.order.every((id) => isTerminal(state.steps[id].status))) {
      state.result = taskResult(template, state);
      moveTask(state, "completed", this.now());
    }
  }

  /** Whether a dependency no longer holds its dependents back. */
  private settled(template: TaskTemplate, state: TaskState, id: string): boolean {
    const status = state.steps[id].status;
    if (status === "completed" || status === "skipped") return true;
    const optional = template.steps.find((s) => s.id === id)?.optional ?? false;
    return optional && isTerminal(status);
  }

  /** Compensations run one at a time, newest completed step first (a saga). */
  private async advanceCompensation(record: TaskRecord): Promise<void> {
    const { state } = record;
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
      const spec = this.compensationSpec(record, index);
      if (compensation.retry_at !== undefined && compensation.retry_at > this.now()) {
        this.armRetry(record, spec, compensation.retry_at);
        return;
      }
      await this.dispatchAll(record, [{ work: compensation, spec }]);
      if (!isTerminal(compensation.status)) return;
    }
  }

  /**
   * Routes each piece of work, writes the dispatches to the task state before sending
   * anything (so a restart knows what may be in flight), then sends them in parallel.
   */
  private async dispatchAll(record: TaskRecord, items: { work: WorkState; spec: WorkSpec }[]): Promise<void> {
    const { state } = record;
    const sends: { work: WorkState; spec: WorkSpec; envelope: Envelope; mailbox: string }[] = [];
    for (const { work, spec } of items) {
      // An earlier item's final failure may have ended the task and canceled this one.
      if (work.status !== "pending") continue;
      const now = this.now();
      const performer = spec.performer;
      const target = "agent" in performer ? performer.agent : "*";
      const envelope = spec.envelope(newId(), now, target);
      const decision = await this.o.router.decide(envelope, { fallback: false });
      if ("reason" in decision && (decision.kind === "unavailable" || decision.kind === "at_capacity")) {
        // Mailboxes exist so that work can wait for an agent that is not there yet.
        this.waitForAgent(record, work, spec, decision.reason);
        continue;
      }
      this.clearTimer(record, `wait:${spec.key}`);
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = now;
      work.started_at ??= now;
      work.retry_at = undefined;
      if ("reason" in decision) {
        const letter = await this.o.deadLetters.put(decision.reason, { envelope });
        this.o.router.reportDead(letter, decision.kind);
        this.attemptFailed(record, work, spec, "failed", `no agent could take it: ${decision.reason}`);
        continue;
      }
      const agent = decision.agent;
      this.o.router.noteRouted(decision.layer, envelope, agent);
      work.dispatch = { msg_id: envelope.msg_id, agent: agent.name, mailbox: agent.mailbox, created_at: now };
      (work as StepState).agent = agent.name;
      moveWork(work, "dispatching", now, spec.label);
      sends.push({ work, spec, envelope: { ...envelope, target: agent.name }, mailbox: agent.mailbox });
    }
    const live = sends.filter((s) => this.inFlight(s.work, s.envelope.msg_id));
    if (live.length === 0) return;
    if (state.status === "pending") moveTask(state, "dispatching", this.now());
    await this.o.store.save(state);
    await Promise.all(
      live.map(async ({ work, spec, envelope, mailbox }) => {
        try {
          await sendEnvelope(this.o.client, mailbox, envelope, {
            key: queryKey(envelope.msg_id),
            ttl: this.messageTtl,
          });
          if (this.inFlight(work, envelope.msg_id)) this.track(work, envelope.trace_id, envelope.hops);
        } catch (err) {
          if (this.inFlight(work, envelope.msg_id)) {
            this.attemptFailed(record, work, spec, "failed", `could not send it: ${(err as Error).message}`);
          }
          return;
        }
        if (!this.inFlight(work, envelope.msg_id)) return;
        moveWork(work, "running", this.now(), spec.label);
        this.armAttemptDeadline(record, work, spec);
      }),
    );
    if (state.status === "dispatching" || state.status === "pending") {
      if (Object.values(state.steps).some((s) => s.status === "running"))
        moveTask(state, "running", this.now());
    }
  }

  /**
   * Nobody can take the work right now: it stays pending and waits for an agent (woken by
   * wakeWaiting) until its timeout, counted from when it started waiting; without a step
   * timeout it waits as long as the task may run.
   */
  private waitForAgent(record: TaskRecord, work: WorkState, spec: WorkSpec, reason: string): void {
    const now = this.now();
    work.waiting = reason;
    work.waiting_since ??= now;
    this.waiting.add(record);
    const timeout = spec.timeoutMs;
    if (timeout === undefined) return;
    const since = work.waiting_since;
    this.armTimer(record, `wait:${spec.key}`, since + timeout, () => {
      if (work.status !== "pending" || work.waiting === undefined) return false;
      const why = work.waiting;
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = since;
      work.started_at ??= since;
      this.attemptFailed(record, work, spec, "timeout", `no agent took it within ${timeout} ms (${why})`);
      return true;
    });
  }

  /** Records a failed attempt; retries after a backoff while attempts remain, else ends the work. */
  private attemptFailed(
    record: TaskRecord,
    work: WorkState,
    spec: WorkSpec,
    outcome: "failed" | "timeout",
    reason: string,
  ): void {
    const now = this.now();
    this.recordAttempt(work, outcome, reason);
    this.clearTimer(record, `deadline:${spec.key}`);
    this.release(work);
    if (work.dispatch && outcome === "timeout") this.sendCancel(record, work.dispatch);
    work.dispatch = undefined;
    work.deadline = undefined;
    work.error = reason;
    if (work.attempts <= spec.retry.count) {
      moveWork(work, "pending", now, spec.label);
      const backoff = Math.min(
        this.o.maxBackoffMs ?? 60_000,
        spec.retry.backoffMs * 2 ** (work.attempts - 1),
      );
      work.retry_at = now + backoff;
      this.armRetry(record, spec, work.retry_at);
      return;
    }
    moveWork(work, outcome, now, spec.label);
    const step =
      "id" in work ? record.template?.steps.find((s) => s.id === (work as StepState).id) : undefined;
    if (step && !step.optional && !isTerminal(record.state.status)) {
      this.endTask(
        record,
        outcome === "timeout" ? "timeout" : "failed",
        `step '${step.id}' ${outcome === "timeout" ? "timed out" : "failed"}: ${reason}`,
      );
    }
  }

  private recordAttempt(
    work: WorkState,
    outcome: "completed" | "failed" | "timeout" | "canceled",
    error?: string,
  ) {
    work.history.push({
      attempt: work.attempts,
      agent: work.dispatch?.agent,
      msg_id: work.dispatch?.msg_id,
      outcome,
      error,
      started_at: work.attempt_started_at ?? this.now(),
      finished_at: this.now(),
    });
  }

  /** Ends a task early: stops its steps and lines up the compensations of what completed. */
  private endTask(record: TaskRecord, status: "failed" | "timeout" | "canceled", reason: string): void {
    const { state } = record;
    const now = this.now();
    moveTask(state, status, now);
    state.error = reason;
    this.clearTimer(record, "deadline:task");
    for (const id of state.order) {
      const step = state.steps[id];
      if (isTerminal(step.status)) continue;
      if (step.dispatch && (step.status === "running" || step.status === "dispatching")) {
        this.release(step);
        this.sendCancel(record, step.dispatch);
        this.recordAttempt(step, "canceled", reason);
      }
      this.clearTimer(record, `deadline:step:${id}`);
      this.clearTimer(record, `retry:step:${id}`);
      this.clearTimer(record, `wait:step:${id}`);
      step.waiting = undefined;
      step.error ??= status === "canceled" ? "the task was canceled" : `the task ended: ${reason}`;
      moveWork(step, "canceled", now, `step '${id}'`);
    }
    const template = record.template;
    state.compensations = [...state.completed_order]
      .reverse()
      .filter((id) => template?.steps.find((s) => s.id === id)?.compensate)
      .map(
        (id): CompensationState => ({
          step_id: id,
          status: "pending",
          attempts: 0,
          history: [],
          output: undefined,
        }),
      );
    if (state.compensations.length > 0) state.compensation_status = "running";
  }

  private announce(record: TaskRecord): void {
    record.announced = true;
    if (!record.state.queued) {
      this.running = Math.max(0, this.running - 1);
    } else {
      const at = this.queue.indexOf(record);
      if (at >= 0) this.queue.splice(at, 1);
    }
    queueMicrotask(() => this.admit());
    this.clearTimer(record, "deadline:task");
    this.o.router.forgetTrace(record.state.trace_id);
    this.o.onFinished?.(snapshot(record.state));
    for (const wake of [...record.waiters]) wake();
    this.finishedOrder.push(record.state.task_id);
    const keep = this.o.maxFinishedInMemory ?? 10_000;
    while (this.finishedOrder.length > keep) {
      const id = this.finishedOrder.shift()!;
      const old = this.tasks.get(id);
      if (old && old.state.compensation_status !== "running" && old.waiters.size === 0) this.tasks.delete(id);
    }
  }

  // ------------------------------------------------------------------------------ the work

  private stepSpec(record: TaskRecord, id: string): WorkSpec {
    const step = record.template!.steps.find((s) => s.id === id)!;
    const state = record.state;
    return {
      label: `step '${id}'`,
      key: `step:${id}`,
      performer: step.performer!,
      retry: step.retry,
      timeoutMs: step.timeoutMs,
      envelope: (msgId, createdAt, target) =>
        this.envelope(record, {
          msgId,
          createdAt,
          target,
          type: "query",
          stepId: id,
          capability: "capability" in step.performer! ? step.performer.capability : undefined,
          payload: stepInput(step, state),
        }),
    };
  }

  private compensationSpec(record: TaskRecord, index: number): WorkSpec {
    const compensation = record.state.compensations[index];
    const step = record.template?.steps.find((s) => s.id === compensation.step_id);
    if (!step?.compensate) {
      throw new Error(
        `step '${compensation.step_id}' has no compensate in template '${record.state.task_type}'`,
      );
    }
    const performer = step.compensate;
    const done = record.state.steps[step.id];
    return {
      label: `compensation of step '${step.id}'`,
      key: `comp:${index}`,
      performer,
      retry: step.retry,
      timeoutMs: step.timeoutMs ?? this.o.compensationTimeoutMs ?? 30_000,
      envelope: (msgId, createdAt, target) =>
        this.envelope(record, {
          msgId,
          createdAt,
          target,
          type: "compensate",
          stepId: step.id,
          capability: "capability" in performer ? performer.capability : undefined,
          payload: {
            step_id: step.id,
            agent: done.agent,
            input: stepInput(step, record.state),
            output: done.output,
            reason: record.state.error,
          },
        }),
    };
  }

  private envelope(
    record: TaskRecord,
    f: {
      msgId: string;
      createdAt: number;
      target: string;
      type: "query" | "compensate";
      stepId: string;
      capability?: string;
      payload: unknown;
    },
  ): Envelope {
    const envelope = createEnvelope({
      msg_type: f.type,
      source: ORCHESTRATOR,
      target: f.target,
      payload: f.payload,
      trace_id: record.state.trace_id,
      priority: record.state.priority,
      max_hops: record.template?.maxHops,
      reply_to: this.o.names.inbox,
      task_id: record.state.task_id,
      step_id: f.stepId,
      capability: f.target === "*" ? f.capability : undefined,
    });
    envelope.msg_id = f.msgId;
    envelope.created_at = f.createdAt;
    return envelope;
  }

  private sendCancel(record: TaskRecord, dispatch: Dispatch): void {
    const cancel = createEnvelope({
      msg_type: "cancel",
      source: ORCHESTRATOR,
      target: dispatch.agent,
      payload: { msg_id: dispatch.msg_id },
      trace_id: record.state.trace_id,
      priority: "critical",
      task_id: record.state.task_id,
    });
    sendEnvelope(this.o.client, controlMailbox(dispatch.mailbox), cancel, { ttl: 3_600 }).catch((err) => {
      // An agent without a control mailbox (not built on the Agent SDK) cannot be told; its answer is ignored.
      if (!(err instanceof Mq9Error) || err.code !== "MAILBOX_NOT_FOUND") {
        this.report(new Error(`could not tell ${dispatch.agent} to cancel: ${(err as Error).message}`));
      }
    });
  }

  // ------------------------------------------------------------------------------ restart

  /**
   * The version of a stored task's template it started with: the loaded one while it is
   * unchanged, else the text the task kept. So editing `depends_on` (or anything else) never
   * changes what the steps of a task already under way receive; new tasks use the new version.
   */
  private templateOf(state: TaskState): TaskTemplate | undefined {
    const current = this.o.templates.get(state.task_type);
    if (state.template_source === undefined || current?.source === state.template_source) return current;
    const parsed = parseTemplate(
      state.template_source,
      current?.file ?? `${state.task_type} (as the task started)`,
    );
    return parsed.template ?? current;
  }

  private adopt(state: TaskState, template = this.templateOf(state)): TaskRecord {
    const record: TaskRecord = {
      state,
      template,
      timers: new Map(),
      queue: Promise.resolve(),
      waiters: new Set(),
      announced: isTerminal(state.status),
      stepsTold: new Set(state.order.filter((id) => isTerminal(state.steps[id].status))),
    };
    this.tasks.set(state.task_id, record);
    if (record.announced) this.finishedOrder.push(state.task_id);
    return record;
  }

  /**
   * Picks a stored task up again. Work whose dispatch was written but maybe not sent
   * is looked up in the agent's mailbox by its key and sent only if it is not there;
   * work in flight looks for its reply in the inbox. Nothing runs twice.
   */
  private async resume(record: TaskRecord): Promise<void> {
    const { state } = record;
    const unfinished = !isTerminal(state.status);
    if (!unfinished && state.compensation_status !== "running") return;
    const problem = !record.template
      ? `its template '${state.task_type}' is not loaded any more`
      : record.template.order.some((id) => !state.steps[id])
        ? `template '${state.task_type}' changed its steps while the task ran`
        : undefined;
    if (problem) {
      if (unfinished) {
        record.template = undefined;
        this.endTask(record, "failed", problem);
      } else {
        state.compensation_status = "failed";
        state.error = `${state.error ?? ""}; compensation stopped: ${problem}`;
      }
      await this.settle(record);
      return;
    }
    const work: { work: WorkState; spec: WorkSpec }[] = [];
    if (unfinished) {
      for (const id of state.order) work.push({ work: state.steps[id], spec: this.stepSpec(record, id) });
    }
    state.compensations.forEach((c, i) => {
      work.push({ work: c, spec: this.compensationSpec(record, i) });
    });
    for (const { work: w, spec } of work) {
      if (w.dispatch && (w.status === "dispatching" || w.status === "running"))
        await this.recover(record, w, spec);
    }
    if (unfinished && state.deadline) this.armTaskDeadline(record);
    await this.settle(record);
  }

  private async recover(record: TaskRecord, work: WorkState, spec: WorkSpec): Promise<void> {
    const dispatch = work.dispatch!;
    if (work.status === "dispatching") {
      const stored = await this.o.client
        .query(dispatch.mailbox, { key: queryKey(dispatch.msg_id) })
        .catch(() => []);
      if (stored.length === 0) {
        const envelope = spec.envelope(dispatch.msg_id, dispatch.created_at, dispatch.agent);
        try {
          await sendEnvelope(this.o.client, dispatch.mailbox, envelope, {
            key: queryKey(dispatch.msg_id),
            ttl: this.messageTtl,
          });
        } catch (err) {
          this.attemptFailed(record, work, spec, "failed", `could not send it: ${(err as Error).message}`);
          return;
        }
      }
      moveWork(work, "running", this.now(), spec.label);
    }
    this.track(work, record.state.trace_id, 0);
    const [reply] = await this.o.client.query(this.o.names.inbox, { key: replyKey(dispatch.msg_id) });
    if (reply) {
      try {
        if (this.applyReply(record, readEnvelope(reply))) return;
      } catch (err) {
        this.report(err as Error);
      }
    }
    this.armAttemptDeadline(record, work, spec);
  }

  // ------------------------------------------------------------------------------ timers

  private armAttemptDeadline(record: TaskRecord, work: WorkState, spec: WorkSpec): void {
    if (spec.timeoutMs === undefined) return;
    work.deadline ??= this.now() + spec.timeoutMs;
    const msgId = work.dispatch?.msg_id;
    this.armTimer(record, `deadline:${spec.key}`, work.deadline, () => {
      if (!this.inFlight(work, msgId)) return false;
      this.attemptFailed(record, work, spec, "timeout", `no answer within ${spec.timeoutMs} ms`);
      return true;
    });
  }

  private armRetry(record: TaskRecord, spec: WorkSpec, at: number): void {
    this.armTimer(record, `retry:${spec.key}`, at, () => true);
  }

  private armTaskDeadline(record: TaskRecord): void {
    const { state } = record;
    this.armTimer(record, "deadline:task", state.deadline!, () => {
      if (isTerminal(state.status)) return false;
      const seconds = ((state.deadline! - state.created_at) / 1000).toString();
      this.endTask(record, "timeout", `the task did not finish within its timeout of ${seconds} s`);
      return true;
    });
  }

  /** Runs `fire` in the task's chain at `at`; when it reports a change, the task is settled. */
  private armTimer(record: TaskRecord, key: string, at: number, fire: () => boolean): void {
    this.clearTimer(record, key);
    const timer = setTimeout(
      () => {
        record.timers.delete(key);
        if (this.closing) return;
        void this.run(record, async () => {
          if (fire()) await this.settle(record);
        });
      },
      Math.max(0, at - this.now()),
    );
    record.timers.set(key, timer);
  }

  private clearTimer(record: TaskRecord, key: string): void {
    const timer = record.timers.get(key);
    if (timer) {
      clearTimeout(timer);
      record.timers.delete(key);
    }
  }

  /** Runs `work` after everything already queued for the task. */
  private run<T>(record: TaskRecord, work: () => Promise<T>): Promise<T> {
    const result = record.queue.then(work);
    record.queue = result.then(
      () => undefined,
      (err: Error) => {
        if (!(err instanceof OrchestratorError)) this.report(err);
      },
    );
    return result;
  }

  private report(error: Error): void {
    if (this.closing) return;
    (this.o.onError ?? ((e: Error) => process.stderr.write(`mq9 orchestrator: ${e.message}\n`)))(error);
  }
}
