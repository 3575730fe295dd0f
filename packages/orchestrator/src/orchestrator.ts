import { BusNames, type DeadLetter, DeadLetters, type Logger, namedStderrLogger } from "@mq9/agent/internal";
import { connect, type Mq9Client } from "@mq9/client";
import { OrchestratorDefaults } from "./defaults.js";
import { OrchestratorError } from "./errors.js";
import type { OrchestratorApi, TemplateSummary } from "./http/api-routes.js";
import { OrchestratorEvents, type OrchestratorLog } from "./observability/orchestrator-events.js";
import { type MetricsSnapshot, OrchestratorMetrics } from "./observability/orchestrator-metrics.js";
import { AgentDirectory, type DirectoryEntry } from "./routing/agent-directory.js";
import { Router } from "./routing/router.js";
import { Scheduler, type SubmitOptions, type TemplateLookup } from "./scheduler/scheduler.js";
import { TASK_STATUSES, type TaskState, type TaskStatus } from "./scheduler/task-state.js";
import { TaskStore } from "./scheduler/task-store.js";
import { formatProblem, type TemplateProblem } from "./templates/task-template.js";
import { TemplateSet } from "./templates/template-set.js";
import { TraceReader, type TraceView } from "./trace/trace-reader.js";
import { type WebhookConfig, WebhookNotifier } from "./webhooks/webhook-notifier.js";

export type { OrchestratorLog } from "./observability/orchestrator-events.js";

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

/** A problem reporter that logs each problem as a warning. */
const warnOn =
  (logger: Logger) =>
  (error: Error): void =>
    logger.warn(error.message);

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
    const log: OrchestratorLog = options.log ?? (() => {});
    const client = options.client ?? (await connect(options.server, { name: "mq9-orchestrator" }));
    const names = new BusNames(options.namespace);
    const start: StartContext = { client, names, options, report, log };
    const templates = openTemplates(start);
    try {
      await ensureMailboxes(start);
      const webhooks = new WebhookNotifier(options.webhooks ?? [], report);
      const deadLetters = new DeadLetters(client, names);
      const metrics = new OrchestratorMetrics();
      const events = new OrchestratorEvents(
        metrics,
        log,
        webhooks,
        options.logSampleRate ?? OrchestratorDefaults.logSampleRate,
      );
      let scheduler: Scheduler | undefined;
      const directory = await startDirectory(start, events, () => scheduler?.wakeWaiting());
      const router = newRouter(start, directory, deadLetters, events);
      scheduler = await startScheduler(start, templates.lookup, router, deadLetters, events);
      router.listen();
      return new Orchestrator(
        client,
        names,
        templates.lookup,
        directory,
        router,
        scheduler,
        deadLetters,
        webhooks,
        new TraceReader(client, names, deadLetters),
        metrics,
        { client: options.client === undefined, templates: templates.owned },
      );
    } catch (err) {
      templates.owned?.close();
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

// ------------------------------------------------------------------------------ the steps of start

/** What every step of start shares. */
interface StartContext {
  client: Mq9Client;
  names: BusNames;
  options: OrchestratorOptions;
  report: (error: Error) => void;
  log: OrchestratorLog;
}

/** Where the templates are looked up, and the watched folder the orchestrator closes, if it opened one. */
interface OpenedTemplates {
  lookup: TemplateLookup;
  owned?: TemplateSet;
}

/** The task templates: a folder (watched), or the lookup given. */
function openTemplates({ options, report, log }: StartContext): OpenedTemplates {
  if (typeof options.templates !== "string") {
    return { lookup: options.templates ?? { get: () => undefined, names: () => [] } };
  }
  const owned = new TemplateSet({
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
  return { lookup: owned, owned };
}

/**
 * The orchestrator's own mailboxes: its inbox, the router's, the task store's and the dead letters'.
 * A message the router or the inbox cannot take after MAX_DELIVER tries joins the dead letters the
 * orchestrator writes itself: one place to look (`mq9 dlq ls <router>`, traces).
 */
async function ensureMailboxes({ client, names }: StartContext): Promise<void> {
  await client.ensureMailbox({ name: names.deadLetters });
  for (const mailbox of [names.inbox, names.router]) {
    await client.ensureMailbox({ name: mailbox, deadLetter: names.deadLetters, maxDeliver: MAX_DELIVER });
  }
  await client.ensureMailbox({ name: names.tasks });
}

/** Tries of a message in the orchestrator's inbox or the router's before it is a dead letter. */
const MAX_DELIVER = 10;

/** The registry view, read once before anything is routed, then refreshed. */
async function startDirectory(
  { client, options, report }: StartContext,
  events: OrchestratorEvents,
  onRefresh: () => void,
): Promise<AgentDirectory> {
  const directory = new AgentDirectory(client, {
    refreshMs: options.directoryRefreshMs,
    onRefresh,
    onDeath: events.agentDied,
    onError: report,
  });
  await directory.start();
  return directory;
}

/** The router; it listens on its mailbox once the scheduler has started. */
function newRouter(
  { client, names, options, report }: StartContext,
  directory: AgentDirectory,
  deadLetters: DeadLetters,
  events: OrchestratorEvents,
): Router {
  return new Router(client, names, directory, deadLetters, {
    intentThreshold: options.intentThreshold,
    traceBudget: options.traceBudget,
    messageTtlSeconds: options.messageTtlSeconds,
    agentConcurrency: options.agentConcurrency,
    batch: options.pollBatch,
    pollTimeoutMs: options.pollTimeoutMs,
    concurrency: options.routerConcurrency,
    onRouted: events.routed,
    onDeadLetter: events.deadLetter,
    onError: report,
  });
}

/** The scheduler, with its stored tasks resumed and its inbox taken. */
async function startScheduler(
  { client, names, options, report }: StartContext,
  templates: TemplateLookup,
  router: Router,
  deadLetters: DeadLetters,
  events: OrchestratorEvents,
): Promise<Scheduler> {
  const scheduler = new Scheduler({
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
    onStep: events.stepEnded,
    onFinished: events.taskEnded,
    onError: report,
  });
  await scheduler.start();
  return scheduler;
}
