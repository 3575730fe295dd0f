import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Worker } from "node:worker_threads";
import type { Logger } from "@mq9/broker";
import {
  mountOrchestratorApi,
  type OrchestratorApi,
  OrchestratorError,
  type RouteRegistrar,
} from "@mq9/orchestrator";
import type { FastifyInstance } from "fastify";
import { appConnection } from "./app-connection.js";
import type { ServeConfig } from "./config.js";
import { toError } from "./failure-converter.js";
import {
  type FromWorker,
  ORCHESTRATOR_API,
  type OrchestratorSettings,
  type OrchestratorWorkerData,
  type ToWorker,
} from "./orchestrator-calls.js";
import { exportOrchestratorMetrics, type PromRegistry } from "./orchestrator-metrics.js";
import { optionsFor } from "./settings/component-options.js";
import { SETTINGS } from "./settings/serve-settings.js";
import { CallForwarder } from "./worker-calls.js";

/**
 * The orchestrator of a `mq9 serve` process. It runs on a worker thread, a client of
 * this process's broker like any other, so routing and the broker use two cores; the
 * API routes exist from the start and forward to it once it is up (503 until then).
 */
export class ServeOrchestrator {
  private worker?: Worker;
  private api?: OrchestratorApi;
  private closed?: Promise<void>;
  private exited = false;
  private metricsExported = false;
  private readonly lostListeners: ((err: Error) => void)[] = [];

  constructor(
    private readonly config: ServeConfig,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.orchestrator.enabled;
  }

  /** Mounts /api/tasks, /api/traces, /api/agents, /api/dead-letters (503 until `start` is done). */
  routes = (app: RouteRegistrar): void => {
    mountOrchestratorApi(app, () => this.api);
  };

  /**
   * The routes on serve's HTTP server. `curl -d '{…}'`, as the design prints the call,
   * labels its JSON form-encoded: any body is read as text and parsed as JSON by the API,
   * so such a call works and a body that is not JSON gets the API's own INVALID_REQUEST.
   */
  mountHttp = async (app: FastifyInstance): Promise<void> => {
    await app.register(async (scope) => {
      const asText = (_request: unknown, body: string | Buffer, done: (err: null, body: string) => void) =>
        done(null, String(body));
      scope.removeContentTypeParser("application/json");
      scope.addContentTypeParser("application/json", { parseAs: "string" }, asText);
      scope.addContentTypeParser("*", { parseAs: "string" }, asText);
      this.routes(scope);
    });
  };

  /** Called when the thread of a started orchestrator stops without being closed. */
  onLost(listener: (err: Error) => void): void {
    this.lostListeners.push(listener);
  }

  /**
   * Starts the worker, which connects to the broker of this process and starts the
   * orchestrator; its numbers join the broker's /metrics when `metrics` is given.
   */
  async start(host: string, port: number, metrics?: PromRegistry): Promise<void> {
    // Started again after a close (a cluster node that regained the orchestrator's lock).
    this.closed = undefined;
    this.exited = false;
    const settings = this.config.orchestrator;
    const broker = appConnection(this.config, host, port, "mq9-orchestrator");
    const folder = resolve(settings.templates);
    const data: OrchestratorWorkerData = {
      server: broker.server,
      connect: broker.options,
      templates: folder,
      settings: optionsFor("orchestrator", this.config, SETTINGS) as OrchestratorSettings,
      webhooks: settings.webhooks,
    };
    const worker = new Worker(new URL("./orchestrator-worker.js", import.meta.url), { workerData: data });
    this.worker = worker;
    const calls = new CallForwarder<OrchestratorApi>(ORCHESTRATOR_API, (message) => {
      if (this.worker !== worker || this.exited) {
        throw new OrchestratorError("NOT_READY", "the orchestrator is stopping");
      }
      worker.postMessage(message satisfies ToWorker);
    });
    const taskTypes = await new Promise<string[]>((ready, failed) => {
      worker.on("message", (message: FromWorker) => {
        switch (message.type) {
          case "ready":
            ready(message.taskTypes);
            break;
          case "failed":
            failed(toError(message.failure));
            break;
          case "warn":
            this.logger.warn(`orchestrator: ${message.message}`);
            break;
          case "log":
            this.logger[message.level](
              { orchestrator: true, ...message.fields },
              `orchestrator: ${message.message}`,
            );
            break;
          case "result":
          case "error":
            calls.settle(message);
            break;
        }
      });
      worker.on("error", (err) => {
        this.logger.error({ err }, `the orchestrator's thread failed: ${err.message}`);
        failed(err);
      });
      worker.on("exit", (code) => {
        if (this.worker !== worker) return;
        const wasReady = this.api === calls.api;
        this.exited = true;
        this.api = undefined;
        const gone = new OrchestratorError(
          "NOT_READY",
          `the orchestrator's thread stopped (exit code ${code})`,
        );
        calls.failAll(gone);
        failed(gone);
        if (wasReady && !this.closed) for (const listener of this.lostListeners) listener(gone);
      });
    }).catch(async (err: Error) => {
      await worker.terminate();
      throw err;
    });
    this.api = calls.api;
    // Once per process: a restarted orchestrator reports through the same collectors.
    if (metrics && !this.metricsExported) {
      this.metricsExported = true;
      exportOrchestratorMetrics(metrics, () => this.api?.metrics?.());
    }
    this.logger.info(
      { templates: folder, taskTypes, webhooks: settings.webhooks.length },
      existsSync(folder)
        ? `orchestrator ready: ${taskTypes.length} task type${taskTypes.length === 1 ? "" : "s"} from ${folder}`
        : `orchestrator ready; no templates folder at ${folder} yet (create it: it is picked up when it appears; or set orchestrator.templates / --templates)`,
    );
  }

  /** Stops routing and scheduling (tasks stay persisted), then the thread. */
  close(): Promise<void> {
    const worker = this.worker;
    if (!worker || this.exited) return Promise.resolve();
    this.api = undefined;
    this.closed ??= new Promise<void>((done) => {
      worker.once("exit", () => done());
      worker.on("message", (message: FromWorker) => {
        if (message.type === "closed") void worker.terminate();
      });
      worker.postMessage({ type: "close" } satisfies ToWorker);
    });
    return this.closed;
  }
}
