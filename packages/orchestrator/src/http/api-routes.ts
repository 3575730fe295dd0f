import type { DeadLetter } from "@mq9/agent/internal";
import { isTaskPriority, PRIORITY_HELP, type TaskPriority } from "@mq9/agent/internal";
import { Mq9Error } from "@mq9/client";
import { OrchestratorError } from "../errors.js";
import type { MetricsSnapshot } from "../observability/orchestrator-metrics.js";
import type { DirectoryEntry } from "../routing/agent-directory.js";
import type { SubmitOptions } from "../scheduler/scheduler.js";
import {
  isTerminal,
  type StepStatus,
  TASK_STATUSES,
  type TaskState,
  type TaskStatus,
} from "../scheduler/task-state.js";
import type { TemplateProblem } from "../templates/task-template.js";
import type { TraceView } from "../trace/trace-reader.js";

/** The parts of an HTTP request the routes read (fastify's request has them). */
export interface ApiRequest {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** The parts of an HTTP reply the routes use (fastify's reply has them). */
export interface ApiReply {
  code(statusCode: number): ApiReply;
  send(payload?: unknown): ApiReply;
  header?(name: string, value: string): ApiReply;
}

export type ApiHandler = (request: ApiRequest, reply: ApiReply) => Promise<unknown>;

/** Anything routes can be mounted on: a fastify instance, or a test double of the same shape. */
export interface RouteRegistrar {
  get(path: string, handler: ApiHandler): unknown;
  post(path: string, handler: ApiHandler): unknown;
}

/** A task template as GET /api/templates lists it. */
export interface TemplateSummary {
  name: string;
  description: string;
  file?: string;
  steps: TemplateStepSummary[];
}

/** One step of a listed template: who performs it (agent or capability; neither for a merge) and what it waits for. */
export interface TemplateStepSummary {
  id: string;
  depends_on: string[];
  agent?: string;
  capability?: string;
  /** A merge step: the steps whose outputs it combines. */
  merge?: string[];
}

/** POST /api/tasks's answer when it does not wait for the task (202). */
export type TaskSubmitted = Pick<TaskState, "task_id" | "trace_id" | "status">;

/** A task as GET /api/tasks lists it: its state and each step's, without payloads. */
export interface TaskSummary {
  task_id: string;
  task_type: string;
  trace_id: string;
  status: TaskStatus;
  created_at: number;
  finished_at?: number;
  error?: string;
  steps: Record<string, StepStatus>;
}

/**
 * What the HTTP API asks of an orchestrator: the Orchestrator itself, or a stand-in
 * that forwards to one elsewhere (`mq9 serve` runs it on a worker thread).
 */
export interface OrchestratorApi {
  submit(taskType: string, payload: unknown, options?: SubmitOptions): Promise<TaskState>;
  wait(taskId: string, timeoutMs?: number): Promise<TaskState>;
  task(taskId: string): Promise<TaskState | undefined>;
  tasks(status?: TaskStatus): TaskState[] | Promise<TaskState[]>;
  cancel(taskId: string): Promise<TaskState>;
  trace(traceId: string, page?: { offset?: number; limit?: number }): Promise<TraceView>;
  agents(): DirectoryEntry[] | Promise<DirectoryEntry[]>;
  /** Reads the registry afresh before `agents()` (optional). */
  refreshAgents?(): Promise<void>;
  /** The orchestrator's numbers (optional; `mq9 serve` puts them on /metrics). */
  metrics?(): MetricsSnapshot | Promise<MetricsSnapshot>;
  deadLetterList(options?: { limit?: number; traceId?: string }): Promise<DeadLetter[]>;
  templateList(): TemplateSummary[] | Promise<TemplateSummary[]>;
  /** Problems of the template files' last load (shown beside the templates). */
  templateProblems?(): TemplateProblem[] | Promise<TemplateProblem[]>;
}

/** Where the API finds the orchestrator: itself, or a getter for one that starts after the HTTP server. */
export type OrchestratorSource = OrchestratorApi | (() => OrchestratorApi | undefined);

const DEFAULT_WAIT_MS = 60_000;
const MAX_WAIT_MS = 15 * 60_000;

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function bodyOf(request: ApiRequest): Record<string, unknown> {
  let body = request.body;
  if (typeof body === "string" && body.trim() !== "") {
    try {
      body = JSON.parse(body);
    } catch {
      throw new OrchestratorError("INVALID_REQUEST", "the request body is not JSON");
    }
  }
  if (body === undefined || body === null || body === "") return {};
  if (typeof body !== "object" || Array.isArray(body)) {
    throw new OrchestratorError("INVALID_REQUEST", "the request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function flag(value: unknown): boolean {
  return value === true || value === "true" || value === "1" || value === "";
}

function milliseconds(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new OrchestratorError("INVALID_REQUEST", `${name} must be >= 0 ms`);
  return Math.min(n, MAX_WAIT_MS);
}

function summary(task: TaskState): TaskSummary {
  return {
    task_id: task.task_id,
    task_type: task.task_type,
    trace_id: task.trace_id,
    status: task.status,
    created_at: task.created_at,
    finished_at: task.finished_at,
    error: task.error,
    steps: Object.fromEntries(Object.values(task.steps).map((s) => [s.id, s.status])),
  };
}

function failure(err: unknown): { status: number; body: { error: string; code: string } } {
  if (err instanceof OrchestratorError)
    return { status: err.httpStatus, body: { error: err.message, code: err.code } };
  if (err instanceof Mq9Error) {
    const status = err.code === "NOT_CONNECTED" || err.code === "TIMEOUT" ? 503 : 502;
    return { status, body: { error: `the broker: ${err.message}`, code: err.code } };
  }
  return { status: 500, body: { error: (err as Error).message ?? String(err), code: "INTERNAL" } };
}

/**
 * Mounts the orchestrator's HTTP API (tasks, traces, agents, dead letters) on the
 * broker's HTTP server, e.g. `Broker.start({ http: { port, routes: (app) => mountOrchestratorApi(app, o) } })`.
 */
export function mountOrchestratorApi(app: RouteRegistrar, source: OrchestratorSource): void {
  const orchestrator = (): OrchestratorApi => {
    const found = typeof source === "function" ? source() : source;
    if (!found) throw new OrchestratorError("NOT_READY", "the orchestrator is starting; try again shortly");
    return found;
  };
  const route =
    (work: (request: ApiRequest, reply: ApiReply) => Promise<unknown>): ApiHandler =>
    async (request, reply) => {
      try {
        return await work(request, reply);
      } catch (err) {
        const { status, body } = failure(err);
        // A full queue says when to come back (429 Too Many Requests).
        if (err instanceof OrchestratorError && err.retryAfterSeconds !== undefined) {
          reply.header?.("retry-after", String(err.retryAfterSeconds));
        }
        return reply.code(status).send(body);
      }
    };

  app.post(
    "/api/tasks",
    route(async (request, reply) => {
      const body = bodyOf(request);
      const query = record(request.query);
      if (typeof body.task_type !== "string" || body.task_type === "") {
        throw new OrchestratorError("INVALID_REQUEST", "give the task_type (a template name) and a payload");
      }
      if (body.priority !== undefined && !isTaskPriority(body.priority)) {
        throw new OrchestratorError("INVALID_REQUEST", PRIORITY_HELP);
      }
      if (body.trace_id !== undefined && (typeof body.trace_id !== "string" || body.trace_id === "")) {
        throw new OrchestratorError("INVALID_REQUEST", "trace_id must be a non-empty string");
      }
      // Synchronous unless asked otherwise (see docs/orchestrator.md, "HTTP API").
      const asynchronous =
        flag(query.async) || body.async === true || query.wait === "false" || body.wait === false;
      // Checked before the task is stored: a refused request changes nothing.
      const waitMs = milliseconds(
        query.timeout_ms ?? body.timeout_ms ?? body.wait_timeout_ms,
        "timeout_ms",
        DEFAULT_WAIT_MS,
      );
      const o = orchestrator();
      const task = await o.submit(body.task_type, body.payload, {
        priority: body.priority as TaskPriority | undefined,
        traceId: body.trace_id as string | undefined,
      });
      if (asynchronous) {
        const submitted: TaskSubmitted = {
          task_id: task.task_id,
          trace_id: task.trace_id,
          status: task.status,
        };
        return reply.code(202).send(submitted);
      }
      const done = await o.wait(task.task_id, waitMs);
      return reply.code(isTerminal(done.status) ? 200 : 202).send(done);
    }),
  );

  app.get(
    "/api/tasks",
    route(async (request, reply) => {
      const query = record(request.query);
      const status = query.status;
      if (status !== undefined && !TASK_STATUSES.includes(status as TaskStatus)) {
        throw new OrchestratorError("INVALID_REQUEST", `status must be one of ${TASK_STATUSES.join(", ")}`);
      }
      const limit = query.limit === undefined ? 100 : Number(query.limit);
      if (!Number.isInteger(limit) || limit < 1) {
        throw new OrchestratorError("INVALID_REQUEST", "limit must be a whole number >= 1");
      }
      const tasks = (await orchestrator().tasks(status as TaskStatus | undefined)).slice(0, limit);
      return reply.code(200).send({ tasks: tasks.map(summary) });
    }),
  );

  app.get(
    "/api/tasks/:id",
    route(async (request, reply) => {
      const id = String(record(request.params).id);
      const task = await orchestrator().task(id);
      if (!task)
        throw new OrchestratorError("TASK_NOT_FOUND", `no task ${id}; list tasks with GET /api/tasks`);
      return reply.code(200).send(task);
    }),
  );

  app.post(
    "/api/tasks/:id/cancel",
    route(async (request, reply) => {
      const task = await orchestrator().cancel(String(record(request.params).id));
      return reply.code(200).send(task);
    }),
  );

  app.get(
    "/api/traces/:trace_id",
    route(async (request, reply) => {
      const query = record(request.query);
      const page: { offset?: number; limit?: number } = {};
      for (const key of ["offset", "limit"] as const) {
        if (query[key] === undefined) continue;
        const n = Number(query[key]);
        if (!Number.isInteger(n) || n < (key === "limit" ? 1 : 0)) {
          throw new OrchestratorError(
            "INVALID_REQUEST",
            `${key} must be a whole number >= ${key === "limit" ? 1 : 0}`,
          );
        }
        page[key] = n;
      }
      const view = await orchestrator().trace(String(record(request.params).trace_id), page);
      return reply.code(200).send(view);
    }),
  );

  app.get(
    "/api/agents",
    route(async (_request, reply) => {
      const o = orchestrator();
      await o.refreshAgents?.();
      const agents = (await o.agents()).map((a) => ({
        name: a.name,
        mailbox: a.mailbox,
        alive: a.alive,
        orchestrated: a.orchestrated,
        capabilities: a.capabilities,
        weight: a.weight,
        max_concurrency: a.maxConcurrency,
        load: a.load,
        in_flight: a.inFlight,
        reported_load: a.reportedLoad,
        last_seen: a.lastSeenMs,
        ttl: a.ttlSeconds,
        tags: a.tags,
        description: a.description,
      }));
      return reply.code(200).send({ agents });
    }),
  );

  app.get(
    "/api/dead-letters",
    route(async (request, reply) => {
      const query = record(request.query);
      const limit = query.limit === undefined ? 100 : Number(query.limit);
      if (!Number.isInteger(limit) || limit < 1) {
        throw new OrchestratorError("INVALID_REQUEST", "limit must be a whole number from 1 to 100");
      }
      const letters = await orchestrator().deadLetterList({
        limit,
        traceId: typeof query.trace_id === "string" ? query.trace_id : undefined,
      });
      return reply.code(200).send({ dead_letters: letters });
    }),
  );

  app.get(
    "/api/templates",
    route(async (_request, reply) => {
      const o = orchestrator();
      const templates = await o.templateList();
      const problems = (await o.templateProblems?.()) ?? [];
      return reply.code(200).send({ templates, problems });
    }),
  );
}
