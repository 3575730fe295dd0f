import { BusNames, type DeadLetter, DeadLetters, type Logger, namedStderrLogger } from "@mq9/agent/internal";
import { connect, type Mq9Client } from "@mq9/client";
import { OrchestratorDefaults } from "./defaults.js";
import { OrchestratorError } from "./errors.js";
import type { OrchestratorApi, TemplateSummary } from "./http/api-routes.js";
import { type MetricsSnapshot, OrchestratorMetrics } from "./observability/orchestrator-metrics.js";
import { AgentDirectory, type DirectoryEntry } from "./routing/agent-directory.js";
import { LOOP_KINDS, Router } from "./routing/router.js";
import { Scheduler, type SubmitOptions, type TemplateLookup } from "./scheduler/scheduler.js";
import { TASK_STATUSES, type TaskState, type TaskStatus } from "./scheduler/task-state.js";
import { TaskStore } from "./scheduler/task-store.js";
import { formatProblem, type TemplateProblem } from "./templates/task-template.js";
import { TemplateSet } from "./templates/template-set.js";
import { TraceReader, type TraceView } from "./trace/trace-reader.js";
import { type WebhookConfig, type WebhookEvent, WebhookNotifier } from "./webhooks/webhook-notifier.js";

export interface OrchestratorOptions {
  /** A connected client (not closed by the orchestrator), or … */
  client?: Mq9Client;
  /** … a broker URL to connect to (default mq9://127.0.0.1:4332). */
  server?: string;
  /** Task templates: a folder of YAML files (watched and reloaded), or a TemplateSet. */
  templates?: string | TemplateLookup;
  /** Re-read the templates folder when it changes (default true). */
  watchTemplates?: boolean;
  /** Prefix of the orchestrator's mailboxes (default "orch"). */
  namespace?: string;
  webhooks?: WebhookConfig[];
  /** Least semantic similarity for intent routing, when the registry reports scores (default 0.2). */
  intentThreshold?: number;
  /** Messages one trace may route (default 1 000). */
  traceBudget?: number;
  /** How often the registry view is refreshed (default 1 000 ms). */
  directoryRefreshMs?: number;
  /** Seconds finished tasks are kept (default 7 days). */
  retentionSeconds?: number;
  /** Seconds messages are kept in agents' mailboxes (traces are read from them; default 7 days). */
  messageTtlSeconds?: number;
  /** Seconds a trace's memory lives (default a day). */
  memoryTtlSeconds?: number;
  /** Where problems that do not stop the orchestrator are logged; default: one line each on stderr. */
  logger?: Logger;
  /** Problems that do not stop the orchestrator (a failed refresh, an undeliverable webhook); default: a warning on `logger`. */
  onError?: (error: Error) => void;
  /** Tasks run at once; later ones are queued, pending (default 10 000). */
  maxTasksInFlight?: number;
  /** Tasks that may wait in the queue; beyond it POST /api/tasks answers 429 (default 10 000). */
  queueCapacity?: number;
  /** Work in progress one agent may have; beyond it steps wait in the orchestrator (0 = no limit, default). */
  agentConcurrency?: number;
  /** Messages per FETCH of the router mailbox and the inbox (default 256 and 100). */
  pollBatch?: number;
  /** Longest wait (ms) of one FETCH when a mailbox is empty (default 2 000). */
  pollTimeoutMs?: number;
  /** Messages the router mailbox's consumer handles at once (default 1 024). */
  routerConcurrency?: number;
  /** Share (0..1) of routed messages that get a log line (default 0.01); tasks and steps always do. */
  logSampleRate?: number;
  /** Structured log lines (metadata only, never payloads); default: none. */
  log?: OrchestratorLog;
}

/** A log line of the orchestrator: level, message and metadata fields (ids, agent, durations). */
export type OrchestratorLog = (
  level: "debug" | "info" | "warn",
  message: string,
  fields: Record<string, unknown>,
) => void;

/** A problem reporter that logs each problem as a warning. */
const warnOn =
  (logger: Logger) =>
  (error: Error): void =>
    logger.warn(error.message);

const STATUS_EVENT: Partial<Record<TaskStatus, WebhookEvent>> = {
  completed: "task_completed",
  failed: "task_failed",
  timeout: "task_timeout",
  canceled: "task_canceled",
};

/**
 * The orchestrator: routing, task templates, the scheduler and traces, written against
 * the mq9 client SDK only, so it runs on any mq9 broker. Its bus is mq9 mailboxes.
 */
export class Orchestrator implements OrchestratorApi {
  private constructor(
    readonly client: Mq9Client,
    readonly names: BusNames,
    readonly templates: TemplateLookup,
    readonly directory: AgentDirectory,
    readonly router: Router,
    readonly scheduler: Scheduler,
    readonly deadLetters: DeadLetters,
    readonly webhooks: WebhookNotifier,
    private readonly traces: TraceReader,
    private readonly counters: OrchestratorMetrics,
    private readonly owned: { client: boolean; templates?: TemplateSet },
  ) {}

  /** Connects, creates its mailboxes, reads the registry, resumes unfinished tasks and starts routing. */
  static async start(options: OrchestratorOptions = {}): Promise<Orchestrator> {
    const report = options.onError ?? warnOn(options.logger ?? namedStderrLogger("mq9 orchestrator"));
    const client = options.client ?? (await connect(options.server, { name: "mq9-orchestrator" }));
    const names = new BusNames(options.namespace);
    const log: OrchestratorLog = options.log ?? (() => {});
    let ownedTemplates: TemplateSet | undefined;
    let templates: TemplateLookup;
    if (typeof options.templates === "string") {
      ownedTemplates = new TemplateSet({
        folder: options.templates,
        watch: options.watchTemplates ?? true,
        onProblems: (problems) => {
          for (const p of problems) report(new Error(`template problem: ${formatProblem(p)}`));
        },
        // A folder made or changed after the start says what it brought.
        onReload: (types) =>
          log("info", `templates reloaded: ${types.length} task type${types.length === 1 ? "" : "s"}`, {
            templates: options.templates,
            task_types: types,
          }),
      });
      templates = ownedTemplates;
    } else {
      templates = options.templates ?? { get: () => undefined, names: () => [] };
    }
    try {
      for (const mailbox of [names.inbox, names.router, names.tasks, names.deadLetters]) {
        await client.ensureMailbox({ name: mailbox });
      }
      const webhooks = new WebhookNotifier(options.webhooks ?? [], report);
      const deadLetters = new DeadLetters(client, names);
      const metrics = new OrchestratorMetrics();
      const sampleRate = options.logSampleRate ?? OrchestratorDefaults.logSampleRate;
      let scheduler: Scheduler | undefined;
      const directory = new AgentDirectory(client, {
        refreshMs: options.directoryRefreshMs,
        onRefresh: () => scheduler?.wakeWaiting(),
        onDeath: (agent) =>
          webhooks.notify("agent_dead", {
            name: agent.name,
            mailbox: agent.mailbox,
            last_seen: agent.lastSeenMs,
            capabilities: agent.capabilities,
          }),
        onError: report,
      });
      await directory.start();
      const router = new Router(client, names, directory, deadLetters, {
        intentThreshold: options.intentThreshold,
        traceBudget: options.traceBudget,
        messageTtlSeconds: options.messageTtlSeconds,
        agentConcurrency: options.agentConcurrency,
        batch: options.pollBatch,
        pollTimeoutMs: options.pollTimeoutMs,
        concurrency: options.routerConcurrency,
        onRouted: (layer, envelope, agent) => {
          metrics.dispatched(layer);
          if (sampleRate > 0 && Math.random() < sampleRate) {
            log("debug", `routed ${envelope.msg_type} by ${layer}`, {
              trace_id: envelope.trace_id,
              msg_id: envelope.msg_id,
              source: envelope.source,
              agent: agent.name,
              hops: envelope.hops,
              layer,
            });
          }
        },
        onDeadLetter: (letter, kind) => {
          metrics.deadLetter(kind);
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
            log("warn", `dead letter (${kind}): ${letter.reason}`, fields);
            return;
          }
          metrics.loopStopped(kind);
          log("warn", `loop guard stopped a message (${kind}): ${letter.reason}`, fields);
          webhooks.notify("loop_detected", fields);
        },
        onError: report,
      });
      scheduler = new Scheduler({
        client,
        names,
        templates,
        router,
        store: new TaskStore(client, names, options.retentionSeconds),
        retentionSeconds: options.retentionSeconds,
        deadLetters,
        memoryTtlSeconds: options.memoryTtlSeconds,
        messageTtlSeconds: options.messageTtlSeconds,
        maxTasksInFlight: options.maxTasksInFlight,
        queueCapacity: options.queueCapacity,
        pollBatch: options.pollBatch,
        pollTimeoutMs: options.pollTimeoutMs,
        onStep: (task, step) => {
          const duration =
            step.finished_at !== undefined && step.started_at !== undefined
              ? step.finished_at - step.started_at
              : undefined;
          metrics.stepFinished(step.status, duration);
          // A merge whose inputs gave one field twice lost a value: said out loud, by field name only.
          const clashed = step.merge_clashes ? Object.keys(step.merge_clashes) : [];
          const level = clashed.length > 0 ? "warn" : "info";
          const clash = clashed.length > 0 ? `; inputs clashed on ${clashed.join(", ")} (the last kept)` : "";
          log(level, `step ${step.id} ${step.status}${clash}`, {
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
        },
        onFinished: (task) => {
          metrics.taskFinished(task);
          log(task.status === "completed" ? "info" : "warn", `task ${task.task_id} ${task.status}`, {
            task_id: task.task_id,
            task_type: task.task_type,
            trace_id: task.trace_id,
            status: task.status,
            duration_ms: (task.finished_at ?? task.updated_at) - task.created_at,
            error: task.error,
          });
          const event = STATUS_EVENT[task.status];
          if (event) webhooks.notify(event, task);
        },
        onError: report,
      });
      await scheduler.start();
      router.listen();
      return new Orchestrator(
        client,
        names,
        templates,
        directory,
        router,
        scheduler,
        deadLetters,
        webhooks,
        new TraceReader(client, names, deadLetters),
        metrics,
        { client: options.client === undefined, templates: ownedTemplates },
      );
    } catch (err) {
      ownedTemplates?.close();
      if (options.client === undefined) await client.close();
      throw err;
    }
  }

  /** Starts a task of a template; resolves once it is persisted. */
  submit(taskType: string, payload: unknown, options?: SubmitOptions): Promise<TaskState> {
    return this.scheduler.submit(taskType, payload, options);
  }

  /** A task's state (every step included), or undefined. */
  task(taskId: string): Promise<TaskState | undefined> {
    return this.scheduler.get(taskId);
  }

  /** Recent tasks, newest first, optionally of one status. */
  tasks(status?: TaskStatus): TaskState[] {
    return this.scheduler.list(status);
  }

  cancel(taskId: string): Promise<TaskState> {
    return this.scheduler.cancel(taskId);
  }

  /** Waits until the task ends, at most `timeoutMs`; resolves with its state either way. */
  wait(taskId: string, timeoutMs = 60_000): Promise<TaskState> {
    return this.scheduler.wait(taskId, timeoutMs);
  }

  /** Every message of a trace in time order; throws TRACE_NOT_FOUND when there is none. */
  async trace(traceId: string, page: { offset?: number; limit?: number } = {}): Promise<TraceView> {
    const mailboxes = new Set(this.directory.list().map((a) => a.mailbox));
    let since: number | undefined;
    for (const task of this.scheduler.list()) {
      if (task.trace_id !== traceId) continue;
      since = Math.min(since ?? task.created_at, task.created_at);
      for (const step of Object.values(task.steps)) {
        if (step.dispatch) mailboxes.add(step.dispatch.mailbox);
      }
    }
    const view = await this.traces.read(traceId, mailboxes, { since, ...page });
    if (!view) {
      throw new OrchestratorError(
        "TRACE_NOT_FOUND",
        `no message of trace ${traceId} was found (or it expired)`,
      );
    }
    return view;
  }

  /**
   * The registry as the router sees it: manifest, load and liveness of each agent, every
   * kind of agent included.
   */
  agents(): DirectoryEntry[] {
    return this.directory.list();
  }

  /**
   * Reads the whole registry (GET /api/agents does, so every kind of agent is current), at
   * most once a second: a page polling the list must not cost the broker a full read each time.
   */
  async refreshAgents(): Promise<void> {
    const now = Date.now();
    if (now - this.agentsReadAt < 1_000) return;
    this.agentsReadAt = now;
    await this.directory.refresh({ full: true });
  }

  private agentsReadAt = 0;

  /** The orchestrator's numbers now (tasks by state, dispatches, dead letters, loop stops...). */
  metrics(): MetricsSnapshot {
    const tasks: Record<string, number> = {};
    for (const status of TASK_STATUSES) tasks[status] = 0;
    for (const [status, n] of Object.entries(this.scheduler.countByStatus())) tasks[status] = n;
    const depth = this.scheduler.depth;
    tasks.queued = depth.queued;
    tasks.pending -= depth.queued;
    return this.counters.snapshot({ tasks, queueDepth: depth.queued, waiting: depth.waiting });
  }

  /** What is wrong with the template files (file, line, column, message), from the last load. */
  templateProblems(): TemplateProblem[] {
    return this.templates.problems?.() ?? [];
  }

  /** The loaded task templates with their steps, by name. */
  templateList(): TemplateSummary[] {
    return this.templates.names().map((name) => {
      const t = this.templates.get(name)!;
      return {
        name,
        description: t.description,
        file: t.file,
        steps: t.steps.map((s) => ({ id: s.id, depends_on: s.dependsOn, ...s.performer, merge: s.merge })),
      };
    });
  }

  /** The most recent dead letters, oldest first. */
  deadLetterList(options?: { limit?: number; traceId?: string }): Promise<DeadLetter[]> {
    return this.deadLetters.list(options);
  }

  /** Stops routing and scheduling (tasks stay persisted and resume at the next start). */
  async close(): Promise<void> {
    await this.router.close();
    await this.scheduler.close();
    await this.directory.stop();
    await this.webhooks.close();
    this.owned.templates?.close();
    if (this.owned.client) await this.client.close();
  }
}
