import type { Condition } from "./condition.js";

/** Who runs a step's work, or whom to call to undo it. */
export type Performer = { agent: string } | { capability: string };

export interface RetryPolicy {
  /** Extra attempts after the first. */
  count: number;
  backoffMs: number;
}

export interface StepTemplate {
  id: string;
  /** Who does the work; undefined for a merge step, which the scheduler does itself. */
  performer?: Performer;
  /** Steps whose outputs a merge step combines. */
  merge?: string[];
  /** `fields`: one object of the inputs' fields (the design's `mode: merge`); `by_step`: `{step: output}`. */
  mergeStyle?: "fields" | "by_step";
  /** Explicit dependencies plus those implied by `merge` and `when`. */
  dependsOn: string[];
  timeoutMs?: number;
  retry: RetryPolicy;
  /** A failure of an optional step does not fail the task. */
  optional: boolean;
  when?: { source: string; evaluate: Condition };
  /** Run when a later step fails, to undo this one (saga). */
  compensate?: Performer;
  /** 1-based line of the step in its file, for messages. */
  line: number;
}

/** A declarative task: a pipeline, fan-out or DAG of steps. */
export interface TaskTemplate {
  /** The task_type clients ask for. */
  name: string;
  description: string;
  timeoutMs?: number;
  maxHops: number;
  steps: StepTemplate[];
  /** Step ids in an order where every step comes after its dependencies. */
  order: string[];
  file: string;
  /** The template's text, kept with each task so it runs to its end on the version it started with. */
  source?: string;
}

/** A problem in a template file, with where it is. */
export interface TemplateProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

export function formatProblem(problem: TemplateProblem): string {
  // Line 0: a problem of the file or folder as a whole, with no position in it.
  if (problem.line === 0) return `${problem.file}: ${problem.message}`;
  return `${problem.file}:${problem.line}:${problem.column}: ${problem.message}`;
}

export class TemplateError extends Error {
  constructor(readonly problems: TemplateProblem[]) {
    super(problems.map(formatProblem).join("\n"));
    this.name = "TemplateError";
  }
}
