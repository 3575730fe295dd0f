export {
  createEnvelope,
  decodeEnvelope,
  type Envelope,
  EnvelopeError,
  EnvelopeHeaders,
  envelopeHeaders,
  forward,
  MESSAGE_TYPES,
  type MessageType,
  type NewEnvelope,
  replyTo,
} from "./bus/envelope.js";
export { loopViolation, SeenMessages, TraceBudget } from "./bus/loop-guard.js";
export { type AgentView, isAlive } from "./routing/agent-view.js";
export { chooseForCapability } from "./routing/capability-choice.js";
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
