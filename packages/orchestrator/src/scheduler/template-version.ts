import type { TaskTemplate } from "../templates/task-template.js";
import { parseTemplate } from "../templates/template-loader.js";
import type { TaskState } from "./task-state.js";

// Which template a stored task runs on; TaskRun.resume picks the task up from there.

/** Where a restarted scheduler finds the templates its stored tasks started with. */
export interface TemplateSource {
  get(name: string): TaskTemplate | undefined;
}

/**
 * The version of a stored task's template it started with: the loaded one while it is
 * unchanged, else the text the task kept. So editing `depends_on` (or anything else) never
 * changes what the steps of a task already under way receive; new tasks use the new version.
 */
export function templateOf(templates: TemplateSource, state: TaskState): TaskTemplate | undefined {
  const current = templates.get(state.task_type);
  if (state.template_source === undefined || current?.source === state.template_source) return current;
  const parsed = parseTemplate(
    state.template_source,
    current?.file ?? `${state.task_type} (as the task started)`,
  );
  return parsed.template ?? current;
}

/** Why a stored task cannot go on with `template`, or undefined when it can. */
export function templateProblem(state: TaskState, template: TaskTemplate | undefined): string | undefined {
  if (!template) return `its template '${state.task_type}' is not loaded any more`;
  if (template.order.some((id) => !state.steps[id])) {
    return `template '${state.task_type}' changed its steps while the task ran`;
  }
  return undefined;
}
