import {
  type BusNames,
  cancelKey,
  controlMailbox,
  createEnvelope,
  type DeadLetters,
  type Envelope,
  EnvelopeError,
  isTaskPriority,
  type Logger,
  mq9Priority,
  namedStderrLogger,
  newId,
  PRIORITY_HELP,
  queryKey,
  readEnvelope,
  sendEnvelope,
  type TaskPriority,
  TraceMemory,
} from "@mq9/agent/internal";
import { type ConsumedMessage, type Consumer, type Mq9Client, Mq9Error } from "@mq9/client";
import { OrchestratorDefaults } from "../defaults.js";
import { OrchestratorError } from "../errors.js";
import type { Router } from "../routing/router.js";
import type { StepTemplate, TaskTemplate, TemplateProblem } from "../templates/task-template.js";
import { compensationsOwed, errorText, recordAttempt, retryBackoffMs } from "./attempts.js";
import { type RecoveryHost, resume, templateOf } from "./recovery.js";
import { completedOutputs, mergeOutput, taskResult } from "./step-io.js";
import { TaskAdmission } from "./task-admission.js";
import { newTaskRecord, snapshot, type TaskRecord } from "./task-record.js";
import {
  type Dispatch,
  isTerminal,
  moveTask,
  moveWork,
  type StepState,
  type TaskState,
  type TaskStatus,
  type WorkState,
} from "./task-state.js";
import { DEFAULT_RETENTION_S, type TaskStore } from "./task-store.js";
import { TASK_DEADLINE, type TimerKey } from "./task-timers.js";
import { WorkInProgress } from "./work-in-progress.js";
import { compensationSpec, ORCHESTRATOR, stepSpec, type WorkContext, type WorkSpec } from "./work-spec.js";

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
  /** Seconds a finished task is kept (the store's retention): past it the API no longer shows it (default 7 days). */
  retentionSeconds?: number;
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
  /** Where problems are logged when there is no onError; default: one line each on stderr. */
  logger?: Logger;
  /** A problem that does not stop the scheduler (a failed send, a bad reply); default: a warning on `logger`. */
  onError?: (error: Error) => void;
  now?: () => number;
}

export interface SubmitOptions {
  priority?: TaskPriority;
  /** Join an existing trace instead of starting one. */
  traceId?: string;
}

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
  private readonly admission: TaskAdmission;
  private readonly inProgress: WorkInProgress;
  private readonly workContext: WorkContext;
  private readonly recovery: RecoveryHost;
  private inbox?: Consumer;
  private closing = false;
  private readonly now: () => number;
  private readonly messageTtlS: number;
  private readonly reportError: (error: Error) => void;
  /** When start() began: a stored task made later, and not ours, is another orchestrator's. */
  private startedAt = Number.POSITIVE_INFINITY;
  /** Tasks of replies that were not ours, already looked into. */
  private readonly strangers = new Set<string>();

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
    const logger = options.logger ?? namedStderrLogger("mq9 orchestrator");
    this.reportError = options.onError ?? ((error) => logger.warn(error.message));
    this.messageTtlS = options.messageTtlSeconds ?? OrchestratorDefaults.messageTtlSeconds;
    this.admission = new TaskAdmission(
      options.maxTasksInFlight ?? OrchestratorDefaults.maxTasksInFlight,
      options.queueCapacity ?? OrchestratorDefaults.queueCapacity,
      this.now,
    );
    this.inProgress = new WorkInProgress(options.router, this.now);
    this.workContext = {
      inbox: options.names.inbox,
      compensationTimeoutMs: options.compensationTimeoutMs ?? 30_000,
    };
    this.recovery = {
      client: options.client,
      inbox: options.names.inbox,
      messageTtlS: this.messageTtlS,
      now: this.now,
      specs: (record, unfinished) => this.workOf(record, unfinished),
      endTask: (record, status, reason) => this.endTask(record, status, reason),
      settle: (record) => this.settle(record),
      attemptFailed: (record, work, spec, outcome, reason) =>
        this.attemptFailed(record, work, spec, outcome, reason),
      applyReply: (record, envelope) => this.applyReply(record, envelope),
      track: (work, traceId, hops) => this.inProgress.track(work, traceId, hops),
      armAttemptDeadline: (record, work, spec) => this.armAttemptDeadline(record, work, spec),
      armTaskDeadline: (record) => this.armTaskDeadline(record),
      report: (error) => this.report(error),
    };
  }

  /** Loads the stored tasks, resumes the unfinished ones, then takes replies from the inbox. */
  async start(): Promise<void> {
    this.startedAt = this.now();
    const stored = await this.options.store.loadAll();
    const records = stored.map((state) => this.adopt(state));
    const queued = records.filter((r) => r.state.queued && !isTerminal(r.state.status));
    const started = records.filter((r) => !r.state.queued);
    this.admission.restore(queued, started.filter((r) => !isTerminal(r.state.status)).length);
    await Promise.all(started.map((record) => this.run(record, () => resume(this.recovery, record))));
    this.admit();
    this.inbox = this.options.client.consume(this.options.names.inbox, (m) => this.take(m), {
      group: ORCHESTRATOR,
      deliver: "earliest",
      batch: this.options.pollBatch ?? 100,
      maxWaitMs: this.options.pollTimeoutMs ?? OrchestratorDefaults.pollTimeoutMs,
      concurrency: 32,
      leaseMs: this.options.inboxLeaseMs ?? 5_000,
      onError: (error) => this.report(error),
    });
  }

  /** Stops taking replies and clears timers; tasks stay persisted for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    await this.inbox?.stop();
    for (const record of this.tasks.values()) record.timers.clearAll();
    await Promise.all([...this.tasks.values()].map((r) => r.queue));
  }

  /** Starts a task from its template; resolves once it is persisted, with its first state. */
  async submit(taskType: string, payload: unknown, options: SubmitOptions = {}): Promise<TaskState> {
    if (typeof taskType !== "string" || taskType === "") {
      throw new OrchestratorError("INVALID_REQUEST", "task_type must be a non-empty string");
    }
    const template = this.options.templates.get(taskType);
    if (!template) {
      const known = this.options.templates.names();
      throw new OrchestratorError(
        "UNKNOWN_TASK_TYPE",
        `unknown task type '${taskType}'; known types: ${known.length ? known.join(", ") : "none (no templates are loaded)"}`,
      );
    }
    const full = this.admission.mustQueue();
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
    const memoryTtlS = Math.max(
      this.options.memoryTtlSeconds ?? OrchestratorDefaults.memoryTtlSeconds,
      template.timeoutMs ? Math.ceil(template.timeoutMs / 1000) + 3_600 : 0,
    );
    await new TraceMemory(this.options.client, state.trace_id, {
      names: this.options.names,
      ttlSeconds: memoryTtlS,
    }).set("payload", state.payload);
    const record = this.adopt(state, template);
    try {
      await this.run(record, async () => {
        await this.options.store.save(state);
        if (state.deadline) this.armTaskDeadline(record);
      });
    } catch (err) {
      // Not persisted, so not accepted.
      this.tasks.delete(state.task_id);
      throw err;
    }
    if (full) this.admission.enqueue(record);
    else {
      this.admission.started();
      void this.run(record, () => this.settle(record));
    }
    return snapshot(state);
  }

  /** Tasks held in memory, by status (no copies: the metrics ask often). */
  countByStatus(): Record<string, number> {
    this.forgetExpired();
    const counts: Record<string, number> = {};
    for (const { state } of this.tasks.values()) counts[state.status] = (counts[state.status] ?? 0) + 1;
    return counts;
  }

  /** Tasks queued and tasks running (what the metrics show). */
  get depth(): { queued: number; running: number; waiting: number } {
    return { queued: this.admission.queued, running: this.admission.inFlight, waiting: this.waiting.size };
  }

  /** Starts queued tasks while there is room. */
  private admit(): void {
    while (!this.closing) {
      const record = this.admission.next();
      if (!record) return;
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
          st.waiting !== undefined &&
          step.performer !== undefined &&
          this.options.router.couldTake(step.performer)
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
    this.forgetExpired();
    const record = this.tasks.get(taskId);
    if (record) return snapshot(record.state);
    return this.options.store.load(taskId);
  }

  /** Tasks in memory (every unfinished one and the most recent finished ones), newest first. */
  list(status?: TaskStatus): TaskState[] {
    this.forgetExpired();
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
      const stored = await this.options.store.load(taskId);
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
      const stored = await this.options.store.load(taskId);
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
      await this.options.deadLetters.put(`malformed envelope in the orchestrator inbox: ${err.message}`, {
        raw: delivery.text(),
      });
      return;
    }
    const record = envelope.task_id ? this.tasks.get(envelope.task_id) : undefined;
    if (!envelope.in_reply_to) return;
    if (!record) {
      if (envelope.task_id) await this.noteStranger(envelope.task_id);
      return;
    }
    await this.run(record, async () => {
      if (this.applyReply(record, envelope)) await this.settle(record);
    });
  }

  /**
   * A reply for a task this scheduler does not hold. When the task is stored, unfinished and
   * began after this start, another orchestrator started it on the same namespace: the two
   * take each other's replies from the shared inbox, so each loses some. Said once per task.
   */
  private async noteStranger(taskId: string): Promise<void> {
    if (this.strangers.has(taskId)) return;
    if (this.strangers.size >= 1_000) this.strangers.clear();
    this.strangers.add(taskId);
    const stored = await this.options.store.load(taskId).catch(() => undefined);
    if (!stored || isTerminal(stored.status) || stored.created_at < this.startedAt) return;
    const namespace = this.options.names.namespace;
    this.report(
      new Error(
        `a reply for task ${taskId} came to this orchestrator, which did not start it: another orchestrator runs on namespace '${namespace}', and each takes some of the other's replies. Run one orchestrator per namespace: give the other one a namespace of its own, or start mq9 serve with --orchestrator off`,
      ),
    );
  }

  /** Applies an answer to the attempt it answers; false when it answers nothing in flight. */
  private applyReply(record: TaskRecord, envelope: Envelope): boolean {
    if (envelope.msg_type !== "result" && envelope.msg_type !== "error") return false;
    const { state } = record;
    const step = envelope.step_id ? state.steps[envelope.step_id] : undefined;
    if (step && this.inFlight(step, envelope.in_reply_to)) {
      this.release(step);
      const spec = stepSpec(record, step.id, this.workContext);
      record.timers.clear({ kind: "attempt-deadline", work: spec.ref });
      if (envelope.msg_type === "result") {
        recordAttempt(step, "completed", this.now());
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
    const spec = compensationSpec(record, index, this.workContext);
    record.timers.clear({ kind: "attempt-deadline", work: spec.ref });
    if (envelope.msg_type === "result") {
      recordAttempt(compensation, "completed", this.now());
      compensation.output = envelope.payload;
      moveWork(compensation, "completed", this.now(), spec.label);
    } else {
      this.attemptFailed(record, compensation, spec, "failed", errorText(envelope.payload));
    }
    return true;
  }

  /** The dispatch of `work` ended: its agent's work in progress drops, and a waiting task may go. */
  private release(work: WorkState): void {
    if (this.inProgress.release(work) && this.waiting.size > 0) queueMicrotask(() => this.wakeWaiting(1));
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
    await this.options.store.save(record.state);
    this.options.onChange?.(snapshot(record.state));
    const { state } = record;
    const waits =
      !isTerminal(state.status) || state.compensation_status === "running"
        ? state.order.some((id) => state.steps[id].waiting !== undefined) ||
          state.compensations.some((c) => c.waiting !== undefined)
        : false;
    if (waits) this.waiting.add(record);
    else this.waiting.delete(record);
    if (this.options.onStep) {
      for (const id of state.order) {
        const step = state.steps[id];
        if (!isTerminal(step.status) || record.stepsTold.has(id)) continue;
        record.stepsTold.add(id);
        this.options.onStep(state, step);
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
          this.armRetry(record, stepSpec(record, step.id, this.workContext), st.retry_at);
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
        record,
        ready.map((step) => ({
          work: state.steps[step.id] as WorkState,
          spec: stepSpec(record, step.id, this.workContext),
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
      const spec = compensationSpec(record, index, this.workContext);
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
      const decision = await this.options.router.decide(envelope, { fallback: false });
      if ("reason" in decision && (decision.kind === "unavailable" || decision.kind === "at_capacity")) {
        // Mailboxes exist so that work can wait for an agent that is not there yet.
        this.waitForAgent(record, work, spec, decision.reason);
        continue;
      }
      record.timers.clear({ kind: "wait", work: spec.ref });
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = now;
      work.started_at ??= now;
      work.retry_at = undefined;
      if ("reason" in decision) {
        const letter = await this.options.deadLetters.put(decision.reason, { envelope });
        this.options.router.reportDead(letter, decision.kind);
        this.attemptFailed(record, work, spec, "failed", `no agent could take it: ${decision.reason}`);
        continue;
      }
      const agent = decision.agent;
      this.options.router.noteRouted(decision.layer, envelope, agent);
      work.dispatch = { msg_id: envelope.msg_id, agent: agent.name, mailbox: agent.mailbox, created_at: now };
      (work as StepState).agent = agent.name;
      moveWork(work, "dispatching", now, spec.label);
      // Counted into the agent's load before anything is awaited, so no other task's decision
      // can see the agent's room that this dispatch has taken (the per-agent limit holds).
      this.inProgress.track(work, envelope.trace_id, envelope.hops);
      sends.push({ work, spec, envelope: { ...envelope, target: agent.name }, mailbox: agent.mailbox });
    }
    const live = sends.filter((s) => this.inFlight(s.work, s.envelope.msg_id));
    if (live.length === 0) return;
    if (state.status === "pending") moveTask(state, "dispatching", this.now());
    try {
      await this.options.store.save(state);
    } catch (err) {
      for (const { work } of live) this.release(work);
      throw err;
    }
    await Promise.all(
      live.map(async ({ work, spec, envelope, mailbox }) => {
        try {
          await sendEnvelope(this.options.client, mailbox, envelope, {
            key: queryKey(envelope.msg_id),
            ttl: this.messageTtlS,
          });
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
    const timeoutMs = spec.timeoutMs;
    if (timeoutMs === undefined) return;
    const since = work.waiting_since;
    this.armTimer(record, { kind: "wait", work: spec.ref }, since + timeoutMs, () => {
      if (work.status !== "pending" || work.waiting === undefined) return false;
      const why = work.waiting;
      work.waiting = undefined;
      work.waiting_since = undefined;
      work.attempts++;
      work.attempt_started_at = since;
      work.started_at ??= since;
      this.attemptFailed(record, work, spec, "timeout", `no agent took it within ${timeoutMs} ms (${why})`);
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
    recordAttempt(work, outcome, this.now(), reason);
    record.timers.clear({ kind: "attempt-deadline", work: spec.ref });
    this.release(work);
    if (work.dispatch && outcome === "timeout") this.sendCancel(record, work.dispatch);
    work.dispatch = undefined;
    work.deadline = undefined;
    work.error = reason;
    if (work.attempts <= spec.retry.count) {
      moveWork(work, "pending", now, spec.label);
      work.retry_at = now + retryBackoffMs(spec.retry, work.attempts, this.options.maxBackoffMs ?? 60_000);
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

  /** Ends a task early: stops its steps and lines up the compensations of what completed. */
  private endTask(record: TaskRecord, status: "failed" | "timeout" | "canceled", reason: string): void {
    const { state } = record;
    const now = this.now();
    moveTask(state, status, now);
    state.error = reason;
    record.timers.clear(TASK_DEADLINE);
    for (const id of state.order) {
      const step = state.steps[id];
      if (isTerminal(step.status)) continue;
      if (step.dispatch && (step.status === "running" || step.status === "dispatching")) {
        this.release(step);
        this.sendCancel(record, step.dispatch);
        recordAttempt(step, "canceled", now, reason);
      }
      record.timers.clearWork({ step: id });
      step.waiting = undefined;
      step.error ??= status === "canceled" ? "the task was canceled" : `the task ended: ${reason}`;
      moveWork(step, "canceled", now, `step '${id}'`);
    }
    state.compensations = compensationsOwed(state, record.template);
    if (state.compensations.length > 0) state.compensation_status = "running";
  }

  private announce(record: TaskRecord): void {
    record.announced = true;
    this.admission.finished(record);
    queueMicrotask(() => this.admit());
    record.timers.clear(TASK_DEADLINE);
    this.options.router.forgetTrace(record.state.trace_id);
    this.options.onFinished?.(snapshot(record.state));
    for (const wake of [...record.waiters]) wake();
    this.finishedOrder.push(record.state.task_id);
    const keep = this.options.maxFinishedInMemory ?? 10_000;
    while (this.finishedOrder.length > keep) this.forget(this.finishedOrder.shift()!);
    this.forgetExpired();
  }

  /**
   * Drops finished tasks past their retention from memory: their stored state has expired
   * too, so the API answers for them as it would after a restart (not found).
   */
  private forgetExpired(): void {
    const retentionMs = (this.options.retentionSeconds ?? DEFAULT_RETENTION_S) * 1000;
    const now = this.now();
    while (this.finishedOrder.length > 0) {
      const id = this.finishedOrder[0];
      const record = this.tasks.get(id);
      if (record) {
        const { state } = record;
        if ((state.finished_at ?? state.updated_at) + retentionMs > now || !forgettable(record)) return;
        this.tasks.delete(id);
      }
      this.finishedOrder.shift();
    }
  }

  private forget(id: string): void {
    const old = this.tasks.get(id);
    if (old && forgettable(old)) this.tasks.delete(id);
  }

  // ------------------------------------------------------------------------------ the work

  /** Every piece of work of a task with its spec: its steps (while it runs), then its compensations. */
  private workOf(record: TaskRecord, withSteps: boolean): { work: WorkState; spec: WorkSpec }[] {
    const { state } = record;
    const work: { work: WorkState; spec: WorkSpec }[] = [];
    if (withSteps) {
      for (const id of state.order) {
        work.push({ work: state.steps[id], spec: stepSpec(record, id, this.workContext) });
      }
    }
    state.compensations.forEach((c, i) => {
      work.push({ work: c, spec: compensationSpec(record, i, this.workContext) });
    });
    return work;
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
    // Keyed and kept as long as the work it cancels, so an agent that was down when it was
    // sent finds it when that work reaches it after a restart, and drops the work.
    sendEnvelope(this.options.client, controlMailbox(dispatch.mailbox), cancel, {
      key: cancelKey(dispatch.msg_id),
      ttl: this.messageTtlS,
    }).catch((err) => {
      // An agent without a control mailbox (not built on the Agent SDK) cannot be told; its answer is ignored.
      if (!(err instanceof Mq9Error) || err.code !== "MAILBOX_NOT_FOUND") {
        this.report(new Error(`could not tell ${dispatch.agent} to cancel: ${(err as Error).message}`));
      }
    });
  }

  // ------------------------------------------------------------------------------ restart

  private adopt(state: TaskState, template = templateOf(this.options.templates, state)): TaskRecord {
    const record = newTaskRecord(state, template, this.now);
    this.tasks.set(state.task_id, record);
    if (record.announced) this.finishedOrder.push(state.task_id);
    return record;
  }

  // ------------------------------------------------------------------------------ timers

  private armAttemptDeadline(record: TaskRecord, work: WorkState, spec: WorkSpec): void {
    if (spec.timeoutMs === undefined) return;
    work.deadline ??= this.now() + spec.timeoutMs;
    const msgId = work.dispatch?.msg_id;
    this.armTimer(record, { kind: "attempt-deadline", work: spec.ref }, work.deadline, () => {
      if (!this.inFlight(work, msgId)) return false;
      this.attemptFailed(record, work, spec, "timeout", `no answer within ${spec.timeoutMs} ms`);
      return true;
    });
  }

  private armRetry(record: TaskRecord, spec: WorkSpec, at: number): void {
    this.armTimer(record, { kind: "retry", work: spec.ref }, at, () => true);
  }

  private armTaskDeadline(record: TaskRecord): void {
    const { state } = record;
    this.armTimer(record, TASK_DEADLINE, state.deadline!, () => {
      if (isTerminal(state.status)) return false;
      const seconds = ((state.deadline! - state.created_at) / 1000).toString();
      this.endTask(record, "timeout", `the task did not finish within its timeout of ${seconds} s`);
      return true;
    });
  }

  /** Runs `fire` in the task's chain at `at`; when it reports a change, the task is settled. */
  private armTimer(record: TaskRecord, key: TimerKey, at: number, fire: () => boolean): void {
    record.timers.arm(key, at, () => {
      if (this.closing) return;
      void this.run(record, async () => {
        if (fire()) await this.settle(record);
      });
    });
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
    this.reportError(error);
  }
}

/** A finished task nobody waits on and with nothing left to undo may leave memory. */
function forgettable(record: TaskRecord): boolean {
  return record.state.compensation_status !== "running" && record.waiters.size === 0;
}
