export { Agent, type AgentOptions, type MessageContext } from "./agent/agent.js";
export {
  type AgentManifest,
  ManifestError,
  type ManifestRecord,
  ORCHESTRATED_TAG,
  type ResolvedManifest,
  registrationBody,
  resolveManifest,
} from "./agent/manifest.js";
export {
  type ChildFields,
  childOf,
  createEnvelope,
  decodeEnvelope,
  type Envelope,
  EnvelopeError,
  EnvelopeHeaders,
  envelopeHeaders,
  forward,
  isTaskPriority,
  MESSAGE_TYPES,
  type MessageType,
  mq9Priority,
  type NewEnvelope,
  newId,
  replyTo,
  type TaskPriority,
} from "./bus/envelope.js";
export { preciseNow, readEnvelope, type SendEnvelopeOptions, sendEnvelope } from "./bus/envelope-io.js";
export { loopViolation, SeenMessages, TraceBudget } from "./bus/loop-guard.js";
export { agentMailbox, BusNames, DEFAULT_NAMESPACE, traceTag } from "./bus/names.js";
export { OrchestratorError, type OrchestratorErrorCode } from "./errors.js";
export {
  type ApiHandler,
  type ApiReply,
  type ApiRequest,
  mountOrchestratorApi,
  type OrchestratorApi,
  type OrchestratorSource,
  type RouteRegistrar,
  type TemplateSummary,
} from "./http/api-routes.js";
export { DEFAULT_MEMORY_TTL_S, TraceMemory } from "./memory/trace-memory.js";
export {
  type MetricsSnapshot,
  OrchestratorMetrics,
  prometheusText,
} from "./observability/orchestrator-metrics.js";
export { Orchestrator, type OrchestratorLog, type OrchestratorOptions } from "./orchestrator.js";
export {
  AgentDirectory,
  type AgentDirectoryOptions,
  type DirectoryEntry,
} from "./routing/agent-directory.js";
export { type AgentView, isAlive } from "./routing/agent-view.js";
export { chooseForCapability } from "./routing/capability-choice.js";
export { type DeadLetter, DeadLetters } from "./routing/dead-letters.js";
export {
  type DeadKind,
  type Delivery,
  LatencySample,
  LOOP_KINDS,
  type RouteDecision,
  type RouteLayer,
  Router,
  type RouterOptions,
} from "./routing/router.js";
export {
  Scheduler,
  type SchedulerOptions,
  type SubmitOptions,
  type TemplateLookup,
} from "./scheduler/scheduler.js";
export {
  type AttemptRecord,
  type CompensationState,
  type Dispatch,
  IllegalTransition,
  isTerminal,
  moveTask,
  moveWork,
  type StepState,
  type StepStatus,
  TASK_STATUSES,
  type TaskState,
  type TaskStatus,
} from "./scheduler/task-state.js";
export { DEFAULT_RETENTION_S, TaskStore } from "./scheduler/task-store.js";
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
export { type TraceEntry, TraceReader, type TraceView } from "./trace/trace-reader.js";
export {
  signWebhookBody,
  verifyWebhookSignature,
  WEBHOOK_EVENTS,
  type WebhookConfig,
  type WebhookEvent,
  WebhookNotifier,
} from "./webhooks/webhook-notifier.js";
