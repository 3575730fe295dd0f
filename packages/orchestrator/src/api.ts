/**
 * `@mq9/orchestrator/api` — the orchestrator's HTTP contract in one place: the types of what
 * its routes answer (tasks, traces, dead letters, templates) and the zod schemas the REST API v1
 * documents them with. It loads zod and nothing else, so the CLI and the dashboard import it
 * without the orchestrator; a type-only import costs nothing at run time.
 *
 * @example
 * ```ts
 * import { isTerminal, type TaskState } from "@mq9/orchestrator/api";
 *
 * const res = await fetch("http://127.0.0.1:8080/api/v1/tasks/t-1");
 * const task = (await res.json()) as TaskState;
 * if (isTerminal(task.status)) console.log(task.status, task.result);
 * ```
 *
 * @module
 */
export type { DeadLetter, Envelope } from "@mq9/agent/internal";
export type {
  TaskSubmitted,
  TaskSummary,
  TemplateStepSummary,
  TemplateSummary,
} from "./http/api-routes.js";
export {
  DeadLetterSchema,
  OrchestratorAgentSchema,
  StepStatusSchema,
  SubmittedSchema,
  TaskSchema,
  TaskStatusSchema,
  TaskSummarySchema,
  TemplateProblemSchema,
  TemplateSchema,
  TraceSchema,
} from "./http/api-schemas.js";
export {
  type AttemptRecord,
  type CompensationState,
  isTerminal,
  type StepState,
  type StepStatus,
  TASK_STATUSES,
  type TaskState,
  type TaskStatus,
} from "./scheduler/task-state.js";
export type { TemplateProblem } from "./templates/task-template.js";
export type { TraceEntry, TraceView } from "./trace/trace-reader.js";
