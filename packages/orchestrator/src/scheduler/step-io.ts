import type { StepTemplate, TaskTemplate } from "../templates/task-template.js";
import type { TaskState } from "./task-state.js";

/** Outputs of the completed steps, by id (what `when` conditions read). */
export function completedOutputs(task: TaskState): Record<string, unknown> {
  const outputs: Record<string, unknown> = {};
  for (const id of task.order) {
    const step = task.steps[id];
    if (step.status === "completed") outputs[id] = step.output;
  }
  return outputs;
}

/**
 * What a step receives (pipeline input passing): the task payload when it depends on
 * nothing, its one dependency's output in a pipeline, or `{ <step>: output }` of its
 * completed dependencies when it has several.
 */
export function stepInput(step: StepTemplate, task: TaskState): unknown {
  if (step.dependsOn.length === 0) return task.payload;
  if (step.dependsOn.length === 1) {
    const dep = task.steps[step.dependsOn[0]];
    return dep.status === "completed" ? dep.output : null;
  }
  return pick(task, step.dependsOn);
}

/** A merge step's output, and the fields that more than one input gave (see mergeOutput). */
export interface MergeResult {
  output: Record<string, unknown>;
  /** Field -> the steps that gave it, in merge order; the last one's value was kept. */
  clashes?: Record<string, string[]>;
}

/**
 * A merge step's output. By step (`merge: [a, b]`): `{ a: output, b: output }` of the listed
 * steps that completed. By fields (`mode: merge`): the fields of their object outputs in one
 * object, in the listed order; an output that is not an object is kept under its step's id.
 * A field given by several inputs keeps the last one's value and is reported in `clashes`,
 * so a lost value is never silent.
 */
export function mergeOutput(step: StepTemplate, task: TaskState): MergeResult {
  const byStep = pick(task, step.merge ?? []);
  if (step.mergeStyle !== "fields") return { output: byStep };
  const merged: Record<string, unknown> = {};
  const givers: Record<string, string[]> = {};
  const give = (field: string, id: string, value: unknown) => {
    merged[field] = value;
    givers[field] = [...(givers[field] ?? []), id];
  };
  for (const [id, output] of Object.entries(byStep)) {
    if (typeof output === "object" && output !== null && !Array.isArray(output)) {
      for (const [field, value] of Object.entries(output)) give(field, id, value);
    } else give(id, id, output);
  }
  const clashes = Object.fromEntries(Object.entries(givers).filter(([, ids]) => ids.length > 1));
  return Object.keys(clashes).length > 0 ? { output: merged, clashes } : { output: merged };
}

/**
 * A finished task's result: the output of its last step, or `{ <step>: output }` when
 * several steps end the DAG (those no other step depends on).
 */
export function taskResult(template: TaskTemplate, task: TaskState): unknown {
  const needed = new Set(template.steps.flatMap((s) => s.dependsOn));
  const sinks = template.order.filter((id) => !needed.has(id));
  if (sinks.length === 1) {
    const sink = task.steps[sinks[0]];
    return sink.status === "completed" ? sink.output : null;
  }
  return pick(task, sinks);
}

function pick(task: TaskState, ids: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const step = task.steps[id];
    if (step?.status === "completed") out[id] = step.output;
  }
  return out;
}
