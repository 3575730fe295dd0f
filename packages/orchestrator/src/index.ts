export {
  type Condition,
  ConditionError,
  type ConditionScope,
  compileCondition,
} from "./templates/condition.js";
export { parseDuration } from "./templates/duration.js";
export {
  formatProblem,
  type Performer,
  type RetryPolicy,
  type StepTemplate,
  type TaskTemplate,
  TemplateError,
  type TemplateProblem,
} from "./templates/task-template.js";
export { parseTemplate } from "./templates/template-loader.js";
export { loadTemplateFolder, TemplateSet, type TemplateSetOptions } from "./templates/template-set.js";
