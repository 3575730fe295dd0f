import type { TaskTemplate } from "./task-template.js";

/** How one step of a template runs beside the others, as the scheduler reads it. */
export interface StepSchedule {
  step: string;
  /** Steps it waits for: its `depends_on`, the step before a pipeline step, what it merges, what its `when` reads. */
  after: string[];
  /** Steps that may run at the same time: neither waits for the other, directly or through others. */
  parallelWith: string[];
}

/**
 * Each step of a template, in the file's order, with what it waits for and what may run
 * beside it. A step without `mode` or `depends_on` waits for nothing, which surprises
 * readers who expect the list to run top to bottom; this says so per step.
 */
export function stepSchedule(template: TaskTemplate): StepSchedule[] {
  const byId = new Map(template.steps.map((step) => [step.id, step]));
  const upstream = new Map<string, Set<string>>();
  // In dependency order, so every dependency's own upstream set is complete when read.
  for (const id of template.order) {
    const all = new Set<string>();
    for (const dep of byId.get(id)?.dependsOn ?? []) {
      all.add(dep);
      for (const further of upstream.get(dep) ?? []) all.add(further);
    }
    upstream.set(id, all);
  }
  const waitsFor = (a: string, b: string) => upstream.get(a)?.has(b) ?? false;
  return template.steps.map((step) => ({
    step: step.id,
    after: [...step.dependsOn],
    parallelWith: template.steps
      .map((other) => other.id)
      .filter((other) => other !== step.id && !waitsFor(step.id, other) && !waitsFor(other, step.id)),
  }));
}
