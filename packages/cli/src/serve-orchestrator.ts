import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "@mq9/broker";
import { type ConnectOptions, connect } from "@mq9/client";
import { mountOrchestratorApi, Orchestrator, type RouteRegistrar } from "@mq9/orchestrator";
import type { ServeConfig } from "./config.js";

/** The orchestrator of a `mq9 serve` process: its API routes exist from the start, the orchestrator shortly after. */
export class ServeOrchestrator {
  private orchestrator?: Orchestrator;

  constructor(
    private readonly config: ServeConfig,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.config.orchestrator.enabled;
  }

  /** Mounts /api/tasks, /api/traces, /api/agents, /api/dead-letters (503 until `start` is done). */
  routes = (app: RouteRegistrar): void => {
    mountOrchestratorApi(app, () => this.orchestrator);
  };

  /** Connects to the broker of this process like any client would, and starts the orchestrator. */
  async start(host: string, port: number): Promise<void> {
    const { orchestrator: settings, auth, tls } = this.config;
    const options: ConnectOptions = { name: "mq9-orchestrator" };
    if (auth.token) options.token = auth.token;
    if (auth.user) {
      options.user = auth.user;
      options.password = auth.password ?? "";
    }
    if (tls.cert) options.tls = { ca: readFileSync(tls.ca ?? tls.cert, "utf8") };
    const folder = resolve(settings.templates);
    const client = await connect(`${tls.cert ? "mq9s" : "mq9"}://${host}:${port}`, options);
    try {
      this.orchestrator = await Orchestrator.start({
        client,
        // Without the folder there is nothing to watch; creating it takes a restart.
        templates: existsSync(folder) ? folder : { get: () => undefined, names: () => [] },
        namespace: settings.namespace,
        intentThreshold: settings.intentThreshold,
        traceBudget: settings.traceBudget,
        webhooks: settings.webhooks,
        onError: (err) => this.logger.warn(`orchestrator: ${err.message}`),
      });
    } catch (err) {
      await client.close();
      throw err;
    }
    const types = this.orchestrator.templates.names();
    this.logger.info(
      { templates: folder, taskTypes: types, webhooks: settings.webhooks.length },
      existsSync(folder)
        ? `orchestrator ready: ${types.length} task type${types.length === 1 ? "" : "s"} from ${folder}`
        : `orchestrator ready; no templates folder at ${folder} yet (create it, or set orchestrator.templates / --templates)`,
    );
  }

  async close(): Promise<void> {
    const orchestrator = this.orchestrator;
    this.orchestrator = undefined;
    if (!orchestrator) return;
    await orchestrator.close();
    await orchestrator.client.close();
  }
}
