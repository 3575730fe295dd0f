// Entry of the worker thread on which `mq9 serve` runs its orchestrator (see orchestrator.ts).
// The orchestrator is a client of the broker like any other; on its own thread its routing no longer
// competes with the broker's event loop for one core.
import { parentPort, workerData } from "node:worker_threads";
import { type ConnectOptions, connect, Mq9Error } from "@mq9/client";
import { Orchestrator, OrchestratorError, type WebhookConfig } from "@mq9/orchestrator";

/** What the serve process hands the worker (structured-clone safe). */
export interface OrchestratorWorkerData {
  server: string;
  connect: ConnectOptions;
  /** Absolute path of the templates folder. */
  templates: string;
  /** Every other setting of `orchestrator` in the serve config (see config.ts), passed as they are. */
  settings: OrchestratorSettings;
  webhooks: WebhookConfig[];
}

/** The orchestrator's settings of `mq9 serve` (config file, MQ9_* env, flags). */
export interface OrchestratorSettings {
  namespace: string;
  intentThreshold: number;
  traceBudget: number;
  directoryRefreshMs: number;
  retentionSeconds: number;
  messageTtlSeconds: number;
  memoryTtlSeconds: number;
  maxTasksInFlight: number;
  queueCapacity: number;
  agentConcurrency: number;
  pollBatch: number;
  pollTimeoutMs: number;
  routerConcurrency: number;
  logSampleRate: number;
}

/** Messages between the serve process and the worker. */
export type ToWorker = { type: "call"; id: number; method: string; args: unknown[] } | { type: "close" };
export type FromWorker =
  | { type: "ready"; taskTypes: string[] }
  | { type: "failed"; error: SerializedError }
  | { type: "warn"; message: string }
  | { type: "log"; level: "debug" | "info" | "warn"; message: string; fields: Record<string, unknown> }
  | { type: "result"; id: number; value: unknown }
  | { type: "error"; id: number; error: SerializedError }
  | { type: "closed" };

export interface SerializedError {
  name: string;
  code?: string;
  message: string;
  retryAfterSeconds?: number;
}

/** The calls the HTTP API may forward; anything else is refused. */
export const FORWARDED_CALLS = [
  "templateProblems",
  "submit",
  "wait",
  "task",
  "tasks",
  "cancel",
  "trace",
  "agents",
  "deadLetterList",
  "templateList",
  "refreshAgents",
  "metrics",
] as const;

export function serializeError(err: unknown): SerializedError {
  if (err instanceof OrchestratorError) {
    return { name: err.name, code: err.code, message: err.message, retryAfterSeconds: err.retryAfterSeconds };
  }
  if (err instanceof Mq9Error) return { name: err.name, code: err.code, message: err.message };
  return { name: "Error", message: err instanceof Error ? err.message : String(err) };
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) return;
  const data = workerData as OrchestratorWorkerData;
  const post = (message: FromWorker) => port.postMessage(message);
  let orchestrator: Orchestrator;
  const client = await connect(data.server, data.connect).catch((err: unknown) => {
    post({ type: "failed", error: serializeError(err) });
    return undefined;
  });
  if (!client) return;
  try {
    orchestrator = await Orchestrator.start({
      client,
      // Watched: a folder created after the start is picked up when it appears.
      templates: data.templates,
      ...data.settings,
      webhooks: data.webhooks,
      onError: (err) => post({ type: "warn", message: err.message }),
      log: (level, message, fields) => post({ type: "log", level, message, fields }),
    });
  } catch (err) {
    await client.close();
    post({ type: "failed", error: serializeError(err) });
    return;
  }
  const calls = new Set<string>(FORWARDED_CALLS);
  port.on("message", (message: ToWorker) => {
    if (message.type === "close") {
      void orchestrator
        .close()
        .catch((err: Error) => post({ type: "warn", message: `shutdown: ${err.message}` }))
        .then(() => client.close())
        .finally(() => {
          post({ type: "closed" });
          port.close();
        });
      return;
    }
    const { id, method, args } = message;
    if (!calls.has(method)) {
      post({ type: "error", id, error: { name: "Error", message: `unknown orchestrator call ${method}` } });
      return;
    }
    const target = orchestrator as unknown as Record<string, (...a: unknown[]) => unknown>;
    Promise.resolve()
      .then(() => target[method](...args))
      .then((value) => post({ type: "result", id, value }))
      .catch((err: unknown) => post({ type: "error", id, error: serializeError(err) }));
  });
  post({ type: "ready", taskTypes: orchestrator.templates.names() });
}

void main();
