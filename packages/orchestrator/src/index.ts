/**
 * `@mq9/orchestrator` — routing, YAML task templates (pipelines, fan-outs, merges, DAGs),
 * traces and loop guards over mq9 mailboxes, written against the client SDK only.
 * Agents are written with `@mq9/agent`; an agent author does not need this package.
 *
 * @example
 * ```ts
 * import { Orchestrator } from "@mq9/orchestrator";
 *
 * const orchestrator = await Orchestrator.start({ server: "mq9://127.0.0.1:4332", templates: "./templates" });
 * const task = await orchestrator.submit("content_analysis", { text: "…" });
 * const done = await orchestrator.wait(task.task_id);
 * console.log(done.status, done.result);
 * await orchestrator.close();
 * ```
 *
 * @module
 */
// The Agent SDK and the envelope live in @mq9/agent; they are re-exported here so code
// written against @mq9/orchestrator before the split keeps working. New code imports them
// from @mq9/agent.
export {
  Agent,
  type AgentManifest,
  type AgentOptions,
  agentMailbox,
  BusNames,
  type ChildFields,
  childOf,
  createEnvelope,
  DEFAULT_MEMORY_TTL_S,
  DEFAULT_NAMESPACE,
  type DeadLetter,
  DeadLetters,
  decodeEnvelope,
  type Envelope,
  EnvelopeError,
  EnvelopeHeaders,
  envelopeHeaders,
  forward,
  isTaskPriority,
  loopViolation,
  ManifestError,
  type ManifestRecord,
  MESSAGE_TYPES,
  type MessageContext,
  type MessageType,
  mq9Priority,
  type NewEnvelope,
  newId,
  ORCHESTRATED_TAG,
  preciseNow,
  type ResolvedManifest,
  readEnvelope,
  registrationBody,
  replyTo,
  resolveManifest,
  SeenMessages,
  type SendEnvelopeOptions,
  sendEnvelope,
  type TaskPriority,
  TraceBudget,
  TraceMemory,
  traceTag,
} from "@mq9/agent/internal";
export { OrchestratorError, type OrchestratorErrorCode } from "./errors.js";
export {
  type ApiHandler,
  type ApiReply,
  type ApiRequest,
  mountOrchestratorApi,
  type OrchestratorApi,
  type OrchestratorSource,
  type RouteRegistrar,
  type TaskSubmitted,
  type TaskSummary,
  type TemplateStepSummary,
  type TemplateSummary,
} from "./http/api-routes.js";
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
export { type StepSchedule, stepSchedule } from "./templates/step-schedule.js";
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
