// What the serve process and its orchestrator thread say to each other: the one definition of
// the API the HTTP routes may call, the worker's start data, and the lifecycle messages.
import type { ConnectOptions } from "@mq9/client";
import type { OrchestratorApi, WebhookConfig } from "@mq9/orchestrator";
import type { Failure } from "./failure-converter.js";
import type { ServeConfig } from "./settings/serve-settings.js";
import { type CallMessage, defineApi, type ReplyMessage } from "./worker-calls.js";

/** Every method of the orchestrator's HTTP API, forwarded to the worker; nothing else is callable. */
export const ORCHESTRATOR_API = defineApi<OrchestratorApi>()([
  "submit",
  "wait",
  "task",
  "tasks",
  "cancel",
  "trace",
  "agents",
  "refreshAgents",
  "metrics",
  "deadLetterList",
  "templateList",
  "templateProblems",
]);

/** What the serve process hands the worker (structured-clone safe). */
export interface OrchestratorWorkerData {
  server: string;
  connect: ConnectOptions;
  /** Absolute path of the templates folder. */
  templates: string;
  /** Every other setting of `orchestrator` in the serve config, passed as they are. */
  settings: OrchestratorSettings;
  webhooks: WebhookConfig[];
}

/**
 * The orchestrator's settings of `mq9 serve` that its thread reads, as settings/serve-settings.ts
 * declares them (the others — on/off, the templates folder, webhooks — the serve process reads).
 */
export type OrchestratorSettings = Omit<ServeConfig["orchestrator"], "enabled" | "templates" | "webhooks">;

/** Serve process → worker. */
export type ToWorker = CallMessage | { type: "close" };

/** Worker → serve process. */
export type FromWorker =
  | ReplyMessage
  | { type: "ready"; taskTypes: string[] }
  | { type: "failed"; failure: Failure }
  | { type: "warn"; message: string }
  | { type: "log"; level: "debug" | "info" | "warn"; message: string; fields: Record<string, unknown> }
  | { type: "closed" };
