import {
  type BusNames,
  type DeadLetters,
  type Envelope,
  EnvelopeError,
  isTaskPriority,
  type Logger,
  mq9Priority,
  namedStderrLogger,
  PRIORITY_HELP,
  readEnvelope,
  type TaskPriority,
  TraceMemory,
} from "@mq9/agent/internal";
import type { ConsumedMessage, Consumer, Mq9Client } from "@mq9/client";
import { OrchestratorDefaults } from "../defaults.js";
import { OrchestratorError } from "../errors.js";
import type { Router } from "../routing/router.js";
import type { TaskTemplate, TemplateProblem } from "../templates/task-template.js";
import { TaskAdmission } from "./task-admission.js";
import { alreadyFinished, newTaskState, TaskRun, type TaskRunHost } from "./task-run.js";
import { isTerminal, type StepState, snapshot, type TaskState, type TaskStatus } from "./task-state.js";
import { DEFAULT_RETENTION_S, type TaskStore } from "./task-store.js";
import { templateOf } from "./template-version.js";
import { WorkInProgress } from "./work-in-progress.js";
import { WorkPost } from "./work-post.js";
import { ORCHESTRATOR } from "./work-spec.js";

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
 * Runs tasks from their templates: a pipeline, a fan-out or a DAG. The scheduler keeps the
 * loop (replies from the inbox), admission (how many tasks run, the queue of the others) and
 * the tasks waiting for an agent; each task is a TaskRun, which owns every move of it:
 * dispatches, replies, timeouts, retries, `when` conditions, merges and the saga's
 * compensations. A task's state is written to mq9 before every dispatch, so a restarted
 * scheduler resumes it without running a step twice.
 */
export class Scheduler {
  private readonly tasks = new Map<string, TaskRun>();
  private readonly finishedOrder: string[] = [];
  /** Tasks with work waiting for an agent; woken when the registry or an agent's load changes. */
  private readonly waiting = new Set<TaskRun>();
  private readonly admission: TaskAdmission<TaskRun>;
  private readonly host: TaskRunHost;
  private inbox?: Consumer;
  private closing = false;
  private readonly now: () => number;
  private readonly reportError: (error: Error) => void;
  /** When start() began: a stored task made later, and not ours, is another orchestrator's. */
  private startedAt = Number.POSITIVE_INFINITY;
  /** Tasks of replies that were not ours, already looked into. */
  private readonly strangers = new Set<string>();

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
    const logger = options.logger ?? namedStderrLogger("mq9 orchestrator");
    this.reportError = options.onError ?? ((error) => logger.warn(error.message));
    this.admission = new TaskAdmission(
      options.maxTasksInFlight ?? OrchestratorDefaults.maxTasksInFlight,
      options.queueCapacity ?? OrchestratorDefaults.queueCapacity,
      this.now,
    );
    const report = (error: Error) => this.report(error);
    this.host = {
      store: options.store,
      router: options.router,
      deadLetters: options.deadLetters,
      post: new WorkPost(
        options.client,
        options.names.inbox,
        options.messageTtlSeconds ?? OrchestratorDefaults.messageTtlSeconds,
        report,
      ),
      inProgress: new WorkInProgress(options.router, this.now),
      workContext: {
        inbox: options.names.inbox,
        compensationTimeoutMs: options.compensationTimeoutMs ?? 30_000,
      },
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      onStep: options.onStep,
      onFinished: options.onFinished,
      onChange: options.onChange,
      now: this.now,
      closing: () => this.closing,
      report,
      setWaiting: (run, waits) => {
        if (waits) this.waiting.add(run);
        else this.waiting.delete(run);
      },
      agentFreed: () => {
        if (this.waiting.size > 0) queueMicrotask(() => this.wakeWaiting(1));
      },
      ended: (run) => this.ended(run),
    };
  }

  /** Loads the stored tasks, resumes the unfinished ones, then takes replies from the inbox. */
  async start(): Promise<void> {
    this.startedAt = this.now();
    const stored = await this.options.store.loadAll();
    const runs = stored.map((state) => this.adopt(state));
    const queued = runs.filter((r) => r.state.queued && !isTerminal(r.state.status));
    const started = runs.filter((r) => !r.state.queued);
    this.admission.restore(queued, started.filter((r) => !isTerminal(r.state.status)).length);
    await Promise.all(started.map((run) => run.resume()));
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
    await Promise.all([...this.tasks.values()].map((run) => run.stop()));
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
    const state = newTaskState(template, {
      taskType,
      payload,
      priority: mq9Priority(asked),
      traceId: options.traceId,
      now: this.now(),
      queued: full,
    });
    await this.rememberPayload(state, template);
    const run = this.adopt(state, template);
    try {
      await run.accept();
    } catch (err) {
      // Not persisted, so not accepted.
      this.tasks.delete(state.task_id);
      throw err;
    }
    if (full) this.admission.enqueue(run);
    else {
      this.admission.started();
      void run.go();
    }
    return snapshot(state);
  }

  /** Puts the payload in the trace's memory, kept at least as long as the task may run. */
  private async rememberPayload(state: TaskState, template: TaskTemplate): Promise<void> {
    const memoryTtlS = Math.max(
      this.options.memoryTtlSeconds ?? OrchestratorDefaults.memoryTtlSeconds,
      template.timeoutMs ? Math.ceil(template.timeoutMs / 1000) + 3_600 : 0,
    );
    await new TraceMemory(this.options.client, state.trace_id, {
      names: this.options.names,
      ttlSeconds: memoryTtlS,
    }).set("payload", state.payload);
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
      const run = this.admission.next();
      if (!run) return;
      void run.go();
    }
  }

  /**
   * Gives tasks waiting for an agent another go when one of their steps could be taken
   * now. Called after each read of the registry and when an agent's work in progress drops.
   */
  wakeWaiting(limit = Number.POSITIVE_INFINITY): void {
    let woken = 0;
    for (const run of this.waiting) {
      if (woken >= limit) return;
      if (!run.mayWait) {
        this.waiting.delete(run);
        continue;
      }
      if (!run.couldGoOn()) continue;
      woken++;
      this.waiting.delete(run);
      void run.go();
    }
  }

  /** A task's state, from memory or from mq9. */
  async get(taskId: string): Promise<TaskState | undefined> {
    this.forgetExpired();
    const run = this.tasks.get(taskId);
    if (run) return snapshot(run.state);
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
    const run = this.tasks.get(taskId);
    if (!run) {
      const stored = await this.options.store.load(taskId);
      if (stored) throw alreadyFinished(stored);
      throw new OrchestratorError("TASK_NOT_FOUND", `no task ${taskId}; list tasks with GET /api/tasks`);
    }
    return run.cancel();
  }

  /** Resolves with the task once it has ended, or with its state so far after `timeoutMs`. */
  async wait(taskId: string, timeoutMs: number): Promise<TaskState> {
    const run = this.tasks.get(taskId);
    if (!run) {
      const stored = await this.options.store.load(taskId);
      if (!stored) throw new OrchestratorError("TASK_NOT_FOUND", `no task ${taskId}`);
      return stored;
    }
    await run.untilAnnounced(timeoutMs);
    return snapshot(run.state);
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
    const run = envelope.task_id ? this.tasks.get(envelope.task_id) : undefined;
    if (!envelope.in_reply_to) return;
    if (!run) {
      if (envelope.task_id) await this.noteStranger(envelope.task_id);
      return;
    }
    await run.receive(envelope);
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

  // ------------------------------------------------------------------------------ memory

  /** A task's end was told: its place goes to the next queued task, and old finished tasks leave memory. */
  private ended(run: TaskRun): void {
    this.admission.finished(run);
    queueMicrotask(() => this.admit());
    this.finishedOrder.push(run.state.task_id);
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
      const run = this.tasks.get(id);
      if (run) {
        const { state } = run;
        if ((state.finished_at ?? state.updated_at) + retentionMs > now || !run.forgettable) return;
        this.tasks.delete(id);
      }
      this.finishedOrder.shift();
    }
  }

  private forget(id: string): void {
    const old = this.tasks.get(id);
    if (old?.forgettable) this.tasks.delete(id);
  }

  private adopt(state: TaskState, template = templateOf(this.options.templates, state)): TaskRun {
    const run = new TaskRun(state, template, this.host);
    this.tasks.set(state.task_id, run);
    if (run.announced) this.finishedOrder.push(state.task_id);
    return run;
  }

  private report(error: Error): void {
    if (this.closing) return;
    this.reportError(error);
  }
}
