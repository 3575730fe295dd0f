/**
 * `@mq9/orchestrator/defaults` — the orchestrator's defaults and the names its settings take,
 * in one place: the orchestrator applies them, and `mq9 serve` declares its settings with the
 * same values. A subpath of its own, so that reading them loads nothing else of the orchestrator.
 *
 * @example
 * ```ts
 * import { OrchestratorDefaults } from "@mq9/orchestrator/defaults";
 *
 * console.log(OrchestratorDefaults.traceBudget); // 1000
 * ```
 */
export const OrchestratorDefaults = {
  /** Prefix of the orchestrator's mailboxes: the agent SDK's DEFAULT_NAMESPACE (a test keeps them equal). */
  namespace: "orch",
  /** Messages one trace may route before the rest are dead-lettered. */
  traceBudget: 1_000,
  /** How often (ms) the orchestrated agents are read from the registry. */
  directoryRefreshMs: 1_000,
  /** Seconds finished tasks are kept. */
  retentionSeconds: 7 * 86_400,
  /** Seconds messages stay in agents' mailboxes (traces are read from them). */
  messageTtlSeconds: 7 * 86_400,
  /** Seconds a trace's shared memory lives. */
  memoryTtlSeconds: 86_400,
  /** Tasks run at once; later ones are queued. */
  maxTasksInFlight: 10_000,
  /** Tasks that may wait in the queue before new ones are refused. */
  queueCapacity: 10_000,
  /** Work in progress one agent may have before steps wait; 0 = no limit. */
  agentConcurrency: 0,
  /** Messages per FETCH of the router mailbox and the orchestrator's inbox. */
  pollBatch: 256,
  /** Longest wait (ms) of one FETCH of an empty mailbox. */
  pollTimeoutMs: 2_000,
  /** Router messages handled at once. */
  routerConcurrency: 1_024,
  /** Share of routed messages with a debug log line. */
  logSampleRate: 0.01,
} as const;

/** What a webhook can be told about. */
export const WEBHOOK_EVENTS = [
  "task_completed",
  "task_failed",
  "task_timeout",
  "task_canceled",
  "agent_dead",
  "loop_detected",
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
