import { ApiError, queryInt, type RestRouter } from "@mq9/broker/internal";
import type { ApiHandler, RouteRegistrar } from "@mq9/orchestrator";
import {
  DeadLetterSchema as DeadLetter,
  OrchestratorAgentSchema as OrchestratorAgent,
  SubmittedSchema as Submitted,
  TaskStatusSchema as TASK_STATUS,
  TaskSchema as Task,
  TaskSummarySchema as TaskSummary,
  TemplateSchema as Template,
  TemplateProblemSchema as TemplateProblem,
  TraceSchema as Trace,
} from "@mq9/orchestrator/api";
import { z } from "zod";

/** Where the handler's headers go: the HTTP reply the REST router sends (Retry-After of a 429). */
interface HeaderSink {
  header(name: string, value: string): unknown;
}

/** The answer an existing orchestrator handler gave, caught instead of sent. */
async function runHandler(
  handler: ApiHandler,
  params: unknown,
  query: unknown,
  body: unknown,
  headers?: HeaderSink,
) {
  let status = 200;
  let sent: unknown;
  const reply = {
    code(code: number) {
      status = code;
      return reply;
    },
    send(payload?: unknown) {
      sent = payload;
      return reply;
    },
    header(name: string, value: string) {
      headers?.header(name, value);
      return reply;
    },
  };
  await handler({ params, query, body }, reply);
  if (status >= 400) {
    const failure = sent as { error?: string; code?: string };
    throw new ApiError(status, failure.code ?? "ORCHESTRATOR", failure.error ?? "the orchestrator failed");
  }
  return { status, body: sent };
}

function orchestratorOff(): ApiError {
  return new ApiError(
    503,
    "ORCHESTRATOR_OFF",
    "the orchestrator is off in this broker; start mq9 serve with --orchestrator on to see tasks, traces and templates",
  );
}

/**
 * The orchestrator's HTTP API folded into the REST API v1 (/api/v1/tasks, traces, dead letters,
 * templates), validated and documented there; `mount` is the orchestrator's own route mounting
 * (its handlers answer), or undefined when the orchestrator is off (503 with the reason).
 */
export function mountOrchestratorRestRoutes(
  router: RestRouter,
  mount: ((registrar: RouteRegistrar) => void) | undefined,
): void {
  const handlers = new Map<string, ApiHandler>();
  mount?.({
    get: (path, handler) => handlers.set(`GET ${path}`, handler),
    post: (path, handler) => handlers.set(`POST ${path}`, handler),
  });
  const forward =
    (key: string) => (input: { params: unknown; query: unknown; body: unknown }, headers?: HeaderSink) => {
      const handler = handlers.get(key);
      if (!handler) throw orchestratorOff();
      return runHandler(handler, input.params, input.query, input.body, headers);
    };
  // 502: the orchestrator could not get an answer from the broker.
  const errors = [400, 502, 503];

  router.add({
    method: "GET",
    path: "/api/v1/tasks",
    tag: "Tasks",
    summary: "List tasks, newest first",
    query: z.object({
      status: TASK_STATUS.optional(),
      limit: queryInt(1).optional().describe("default 100"),
    }),
    responses: { 200: { description: "tasks", schema: z.object({ tasks: z.array(TaskSummary) }) } },
    errors,
    handler: async (input) => forward("GET /api/tasks")({ ...input, query: { ...input.query } }),
  });

  router.add({
    method: "POST",
    path: "/api/v1/tasks",
    tag: "Tasks",
    summary: "Submit a task (a template run); answers once it is done, or at once with async",
    description:
      "task_type names a loaded template (GET /api/v1/templates); a name no template has answers 404 UNKNOWN_TASK_TYPE, whose error lists the known ones. Templates load and reload while the broker runs, so the document cannot list them.",
    query: z.object({
      async: z.enum(["true", "false", "1", "0", ""]).optional().describe("answer 202 at once"),
      wait: z.enum(["true", "false"]).optional().describe("wait=false is async=true"),
      timeout_ms: queryInt(0)
        .optional()
        .describe("how long to wait (default 60 s); 202 when not done by then"),
    }),
    body: z.object({
      task_type: z.string().min(1).describe("a template's name; 404 when none has it"),
      payload: z.unknown().optional(),
      priority: z
        .enum(["critical", "urgent", "normal", "deferred"])
        .optional()
        .describe("deferred is sent as normal"),
      trace_id: z.string().min(1).optional(),
      async: z.boolean().optional(),
      wait: z.boolean().optional(),
      wait_timeout_ms: z.number().int().min(0).optional(),
    }),
    responses: {
      200: { description: "finished", schema: Task },
      202: { description: "accepted and running (async, or not done within the wait)", schema: Submitted },
    },
    // 404: no template has that name (UNKNOWN_TASK_TYPE); 429: the queue is full (QUEUE_FULL), with Retry-After.
    errors: [...errors, 404, 429],
    // The orchestrator's handler reads the query as given (its flags are text).
    handler: async (input, request, reply) =>
      forward("POST /api/tasks")({ ...input, query: request.query }, reply),
  });

  router.add({
    method: "GET",
    path: "/api/v1/tasks/:id",
    tag: "Tasks",
    summary: "One task with each step's state",
    params: z.object({ id: z.string() }),
    responses: { 200: { description: "the task", schema: Task } },
    errors: [...errors, 404],
    handler: async (input) => forward("GET /api/tasks/:id")(input),
  });

  router.add({
    method: "POST",
    path: "/api/v1/tasks/:id/cancel",
    tag: "Tasks",
    summary: "Cancel a task",
    params: z.object({ id: z.string() }),
    responses: { 200: { description: "the task, canceled", schema: Task } },
    errors: [...errors, 404, 409],
    handler: async (input) => forward("POST /api/tasks/:id/cancel")(input),
  });

  router.add({
    method: "GET",
    path: "/api/v1/traces/:trace_id",
    tag: "Tasks",
    summary: "A trace: the messages between agents over time, with hops and dead letters",
    params: z.object({ trace_id: z.string() }),
    responses: { 200: { description: "the trace", schema: Trace } },
    errors: [...errors, 404],
    handler: async (input) => forward("GET /api/traces/:trace_id")(input),
  });

  router.add({
    method: "GET",
    path: "/api/v1/dead-letters",
    tag: "Tasks",
    summary: "Undeliverable messages with their reasons",
    query: z.object({
      limit: queryInt(1, 100).optional(),
      trace_id: z.string().optional(),
    }),
    responses: {
      200: { description: "oldest first", schema: z.object({ dead_letters: z.array(DeadLetter) }) },
    },
    errors,
    handler: async (input) => forward("GET /api/dead-letters")(input),
  });

  router.add({
    method: "GET",
    path: "/api/v1/templates",
    tag: "Tasks",
    summary: "The loaded task templates with their steps (a DAG by depends_on), and the files' problems",
    responses: {
      200: {
        description:
          "templates, and what is wrong with the template files (a broken file's last good version stays)",
        schema: z.looseObject({
          templates: z.array(Template),
          problems: z.array(TemplateProblem).optional(),
        }),
      },
    },
    errors: [502, 503],
    handler: async (input) => forward("GET /api/templates")(input),
  });

  router.add({
    method: "GET",
    path: "/api/v1/orchestrator/agents",
    tag: "Tasks",
    summary: "The agents as the orchestrator's router sees them (alive, load, capabilities)",
    responses: {
      200: { description: "agents", schema: z.object({ agents: z.array(OrchestratorAgent) }) },
    },
    errors: [502, 503],
    handler: async (input) => forward("GET /api/agents")(input),
  });
}
