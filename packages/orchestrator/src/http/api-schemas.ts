import type { DeadLetter } from "@mq9/agent/internal";
import { z } from "zod";
import { TASK_STATUSES, type TaskState } from "../scheduler/task-state.js";
import type { TemplateProblem } from "../templates/task-template.js";
import type { TraceView } from "../trace/trace-reader.js";
import type { TaskSubmitted, TaskSummary, TemplateSummary } from "./api-routes.js";

/**
 * The shapes of the orchestrator's HTTP answers, as the REST API v1 documents them (`mq9 serve`
 * mounts them on /api/v1 and puts them in the OpenAPI document). The checks at the end make each
 * one describe the TypeScript type its handler sends, so the two cannot drift.
 */

export const TaskStatusSchema = z.enum(TASK_STATUSES);
export const StepStatusSchema = z.enum([...TASK_STATUSES, "skipped"]);

export const TaskSummarySchema = z
  .looseObject({
    task_id: z.string(),
    task_type: z.string(),
    trace_id: z.string(),
    status: TaskStatusSchema,
    created_at: z.number().describe("unix milliseconds"),
    finished_at: z.number().optional(),
    error: z.string().optional(),
    steps: z.record(z.string(), StepStatusSchema).describe("each step's status"),
  })
  .meta({ id: "TaskSummary" });

export const TaskSchema = z
  .looseObject({
    task_id: z.string(),
    task_type: z.string(),
    trace_id: z.string(),
    status: TaskStatusSchema,
    payload: z.unknown(),
    result: z.unknown().optional(),
    error: z.string().optional(),
    created_at: z.number(),
    updated_at: z.number(),
    finished_at: z.number().optional(),
    order: z.array(z.string()).describe("step ids in the order the template runs them"),
    steps: z.record(
      z.string(),
      z.looseObject({ id: z.string(), status: StepStatusSchema, agent: z.string().optional() }),
    ),
  })
  .meta({ id: "Task" });

export const SubmittedSchema = z.looseObject({
  task_id: z.string(),
  trace_id: z.string(),
  status: TaskStatusSchema,
});

const TraceEntrySchema = z.looseObject({
  msg_id: z.string(),
  msg_type: z.string(),
  source: z.string(),
  target: z.string(),
  mailbox: z.string(),
  hops: z.number(),
  sent_at: z.number().describe("unix milliseconds"),
  offset_ms: z.number().describe("milliseconds since the trace's first message"),
  step_id: z.string().optional(),
  dead_reason: z.string().optional(),
});

export const TraceSchema = z
  .looseObject({
    trace_id: z.string(),
    started_at: z.number(),
    duration_ms: z.number(),
    messages: z.array(TraceEntrySchema),
  })
  .meta({ id: "Trace" });

export const DeadLetterSchema = z.looseObject({
  reason: z.string(),
  at: z.number(),
  id: z.number().optional(),
});

export const TemplateSchema = z
  .looseObject({
    name: z.string(),
    description: z.string(),
    file: z.string().optional(),
    steps: z.array(z.looseObject({ id: z.string(), depends_on: z.array(z.string()).optional() })),
  })
  .meta({ id: "Template" });

export const TemplateProblemSchema = z.object({
  file: z.string(),
  line: z.number().int(),
  column: z.number().int(),
  message: z.string(),
});

export const OrchestratorAgentSchema = z.looseObject({
  name: z.string(),
  mailbox: z.string(),
  alive: z.boolean(),
  load: z.number().optional(),
});

/** What a loose schema names, without the index signature it adds (an interface has none). */
type Named<T> = T extends readonly (infer Item)[]
  ? Named<Item>[]
  : T extends object
    ? { [K in keyof T as string extends K ? (unknown extends T[K] ? never : K) : K]: Named<T[K]> }
    : T;

/** Compiles only when `Sent` (what a handler sends) has every field the schema documents, typed alike. */
type Describes<Schema extends z.ZodType, Sent extends Named<z.output<Schema>>> = [Schema, Sent];

export type SchemaChecks = [
  Describes<typeof TaskSchema, TaskState>,
  Describes<typeof TaskSummarySchema, TaskSummary>,
  Describes<typeof SubmittedSchema, TaskSubmitted>,
  Describes<typeof TraceSchema, TraceView>,
  Describes<typeof DeadLetterSchema, DeadLetter>,
  Describes<typeof TemplateSchema, TemplateSummary>,
  Describes<typeof TemplateProblemSchema, TemplateProblem>,
];
