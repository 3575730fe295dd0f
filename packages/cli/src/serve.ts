import { Broker, type Logger } from "@mq9/broker";
import type { Command } from "commander";
import { ConfigError, loadServeConfig, SETTINGS, type ServeConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { ServeAgentApps } from "./serve-agent-apps.js";
import { ServeOrchestrator } from "./serve-orchestrator.js";

/** Turns a start failure into the one line a person needs to fix it. */
function explainStartFailure(err: unknown, config: ServeConfig): string {
  type NetError = { code?: string; address?: string; port?: number; cause?: NetError };
  const failure = err as NetError;
  const code = failure.code ?? failure.cause?.code;
  const host = failure.address ?? failure.cause?.address ?? config.server.host;
  const port = failure.port ?? failure.cause?.port ?? config.server.port;
  const flag = port === config.server.port ? "--port" : "--http-port";
  if (code === "EADDRINUSE") {
    return `port ${port} on ${host} is already in use; stop the other process or pass ${flag}`;
  }
  if (code === "EADDRNOTAVAIL")
    return `cannot listen on ${host}: no such address on this machine; check --host`;
  if (code === "EACCES")
    return `not allowed to listen on ${host}:${port}; use a port above 1023 or run with more rights`;
  if (code === "ENOENT" && config.tls.cert) return `cannot read a TLS file: ${(err as Error).message}`;
  return (err as Error).message;
}

function brokerOptions(
  config: ServeConfig,
  logger: Logger,
  orchestrator: ServeOrchestrator,
  agentApps: ServeAgentApps,
) {
  const { server, http, auth, tls, storage, messaging, registry } = config;
  return {
    host: server.host,
    port: server.port,
    maxPayload: server.maxPayload,
    maxConnections: server.maxConnections,
    maxPendingBytes: server.maxPendingBytes,
    dataDir: storage.data,
    sync: storage.sync,
    auth: auth.token || auth.user ? auth : undefined,
    tls: tls.cert && tls.key ? { certFile: tls.cert, keyFile: tls.key, caFile: tls.ca } : undefined,
    leaseMs: messaging.leaseMs,
    maxWaitMs: messaging.maxWaitMs,
    fetchMaxBytes: messaging.fetchMaxBytes,
    defaultMailboxTtl: messaging.defaultMailboxTtl,
    http: {
      host: http.host,
      port: http.port,
      routes: async (app: Parameters<ServeAgentApps["routes"]>[0]) => {
        await agentApps.routes(app);
        if (orchestrator.enabled) await orchestrator.routes(app);
      },
    },
    registry: {
      embedder: registry.embedder,
      vectorStore: registry.vectorStore,
      modelDir: registry.modelDir,
      onnx: { pooling: registry.pooling, queryPrefix: registry.queryPrefix },
      defaultTtl: registry.defaultTtl,
      annThreshold: registry.annThreshold,
      efSearch: registry.efSearch,
      maxCardBytes: registry.maxCardBytes,
      maxSkills: registry.maxSkills,
      preloadEmbedder: registry.preload,
    },
    logger,
  };
}

/** Runs the broker until SIGINT/SIGTERM, then drains and exits. */
export async function serve(flags: Record<string, unknown>): Promise<void> {
  let config: ServeConfig;
  try {
    config = loadServeConfig({ file: flags.config as string | undefined, env: process.env, flags });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`mq9: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.log);
  const orchestrator = new ServeOrchestrator(config, logger);
  const agentApps = new ServeAgentApps(config);
  let broker: Broker;
  try {
    broker = await Broker.start(brokerOptions(config, logger, orchestrator, agentApps));
  } catch (err) {
    process.stderr.write(`mq9: ${explainStartFailure(err, config)}\n`);
    process.exit(1);
  }
  const scheme = config.tls.cert ? "mq9s" : "mq9";
  const http = broker.http;
  logger.info(
    {
      host: broker.host,
      port: broker.port,
      httpPort: http?.port,
      data: config.storage.data,
      sync: config.storage.sync,
    },
    `mq9 broker ready on ${scheme}://${broker.host}:${broker.port}; HTTP on http://${http?.host}:${http?.port} (/healthz, /metrics, /mcp, /a2a, /api)`,
  );
  agentApps.start(broker.host, broker.port);
  // In the background: the broker serves meanwhile, and the API answers 503 until it is up.
  const orchestratorUp = orchestrator.enabled
    ? orchestrator
        .start(broker.host, broker.port, broker.metrics.registry)
        .catch((err: Error) => logger.error({ err }, `the orchestrator did not start: ${err.message}`))
    : Promise.resolve();
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn(`${signal} again: exiting without draining`);
      process.exit(130);
    }
    stopping = true;
    logger.info(`${signal} received: draining and shutting down`);
    orchestratorUp
      .then(() => orchestrator.close())
      .catch((err: Error) => logger.warn(`orchestrator shutdown: ${err.message}`))
      .then(() => agentApps.close())
      .then(() => broker.close())
      .then(
        () => {
          logger.info("stopped");
          process.exit(0);
        },
        (err) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("run the mq9 broker (embedded NATS-protocol listener + SQLite store)")
    .option("-c, --config <file>", "JSON config file (env MQ9_CONFIG); env MQ9_* and flags override it");
  for (const setting of SETTINGS) {
    command.option(
      `--${setting.flag} <${setting.kind === "number" ? "n" : "value"}>`,
      `${setting.help} (env ${setting.env})`,
    );
  }
  command
    .addHelpText(
      "after",
      `
Examples:
  mq9 serve                                 # 127.0.0.1:4332, data in ./mq9-data
  mq9 serve --host 0.0.0.0 --port 4332 --data /var/lib/mq9 --sync full
  MQ9_TOKEN=s3cret mq9 serve --log-format json
  mq9 serve --tls-cert cert.pem --tls-key key.pem   # clients use tls:// or mq9s://`,
    )
    .action((options: Record<string, unknown>) => serve(options));
}
