import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import {
  Broker,
  type BrokerHttpOptions,
  type BrokerOptions,
  type Logger,
  otlpFromEnv,
  otlpMetricsFromEnv,
} from "@mq9/broker";
import type { RestApi } from "@mq9/broker/internal";
import { type RegistrySettings, registryFactory } from "@mq9/registry";
import { say } from "../shared/output.js";
import { ServeAgentApps } from "./agent-apps.js";
import { postgresBrokerOptions } from "./cluster.js";
import { ConfigError, loadServeConfig, type ServeConfig } from "./config.js";
import { ServeDashboard } from "./dashboard.js";
import { createLogger } from "./logger.js";
import { ownMcpUrl } from "./mcp-registration.js";
import { ServeOrchestrator } from "./orchestrator.js";
import { OrchestratorLeadership, SOLE_BROKER } from "./orchestrator-leadership.js";
import { optionsFor } from "./settings/component-options.js";
import { SETTINGS } from "./settings/serve-settings.js";

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

/** Rejects with the listen error (EADDRINUSE …) when `port` on `host` cannot be bound; 0 is any port. */
function checkBindable(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * A busy port is found before anything starts, so that its one line is all it prints (the
 * listener would also log the error, with its stack). A port taken between this and the start is
 * still explained, after that log.
 */
async function checkPorts(config: ServeConfig): Promise<void> {
  if (!config.cluster.enabled) await checkBindable(config.server.host, config.server.port);
  await checkBindable(config.http.host ?? config.server.host, config.http.port);
}

/** The user the in-process apps (MCP, A2A gateway, orchestrator) connect as when users are configured. */
const INTERNAL_USER = "mq9-internal";

/**
 * With users configured, the apps of this process need credentials of their own: an admin user
 * with a random token, known only inside the process, is added to the configured users and put
 * where the apps look for the broker's token.
 */
function withInternalUser(config: ServeConfig): ServeConfig {
  if (config.auth.users === undefined) return config;
  return { ...config, auth: { ...config.auth, token: randomBytes(32).toString("base64url") } };
}

function brokerAuth(auth: ServeConfig["auth"]): BrokerOptions["auth"] {
  if (auth.users !== undefined) {
    return {
      users: [...auth.users, { user: INTERNAL_USER, token: auth.token, admin: true }],
      defaultPermissions: auth.defaultPermissions,
    };
  }
  return auth.token || auth.user
    ? { token: auth.token, user: auth.user, password: auth.password }
    : undefined;
}

function brokerOptions(
  config: ServeConfig,
  logger: Logger,
  orchestrator: ServeOrchestrator,
  agentApps: ServeAgentApps,
): BrokerOptions {
  const { auth, tls } = config;
  const derived = optionsFor("broker", config, SETTINGS) as Partial<BrokerOptions>;
  return {
    ...derived,
    auth: brokerAuth(auth),
    tls: tls.cert && tls.key ? { certFile: tls.cert, keyFile: tls.key, caFile: tls.ca } : undefined,
    http: {
      ...(derived.http as BrokerHttpOptions),
      // The A2A gateway mounted below serves each A2A card: the ARD entries point there.
      ard: {
        ...(derived.http as BrokerHttpOptions).ard,
        cardPath: (mailbox) => `/a2a/${encodeURIComponent(mailbox)}/.well-known/agent-card.json`,
      },
      routes: async (app: Parameters<ServeAgentApps["routes"]>[0], api: RestApi) => {
        await agentApps.routes(app);
        if (orchestrator.enabled) await orchestrator.mountHttp(app);
        // Loaded by serve alone: its schemas would cost every other command.
        const { mountOrchestratorRestRoutes } = await import("./rest-orchestrator.js");
        mountOrchestratorRestRoutes(api.router, orchestrator.enabled ? orchestrator.routes : undefined);
        await ServeDashboard.mount(app);
      },
      openPath: ServeDashboard.openPath,
    },
    registry: registryFactory(optionsFor("registry", config, SETTINGS) as RegistrySettings),
    // This process is the application: its orchestrator and apps trace into the broker's export.
    telemetry:
      config.telemetry.otlpEndpoint !== undefined || otlpFromEnv(process.env)
        ? {
            otlpEndpoint: config.telemetry.otlpEndpoint,
            metrics: config.telemetry.otlpMetrics || otlpMetricsFromEnv(process.env),
            global: true,
          }
        : undefined,
    logger,
  };
}

/** Runs the broker until SIGINT/SIGTERM, then drains and exits. */
export async function serve(flags: Record<string, unknown>): Promise<void> {
  let config: ServeConfig;
  try {
    config = withInternalUser(
      loadServeConfig({ file: flags.config as string | undefined, env: process.env, flags }),
    );
  } catch (err) {
    if (err instanceof ConfigError) {
      say(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.log);
  const orchestrator = new ServeOrchestrator(config, logger);
  const agentApps = new ServeAgentApps(config);
  let broker: Broker;
  let clustered: Awaited<ReturnType<typeof postgresBrokerOptions>>;
  try {
    await checkPorts(config);
    clustered = await postgresBrokerOptions(config, logger);
    broker = await Broker.start({ ...brokerOptions(config, logger, orchestrator, agentApps), ...clustered });
  } catch (err) {
    say(explainStartFailure(err, config));
    process.exit(1);
  }
  agentApps.start(broker.host, broker.port);
  // The MCP endpoint is served on the HTTP port: with it, it is an MCP server of the registry.
  if (broker.http && broker.registry) {
    const nodeUrl = config.cluster.enabled ? config.cluster.nodeHttpUrl : undefined;
    const url = ownMcpUrl(broker.http.host, broker.http.port, nodeUrl);
    await agentApps.registerMcp(broker.registry, url, logger);
  }
  // On a shared store (a cluster, or brokers sharing PostgreSQL), one at a time runs the orchestrator.
  // It starts in the background: the broker serves meanwhile, and the API answers 503 until it is up.
  const shared = clustered?.store?.sharedDatabase();
  const leadership = orchestrator.enabled
    ? new OrchestratorLeadership(
        shared ? shared.clusterLock("orchestrator", "the orchestrator") : SOLE_BROKER,
        orchestrator,
        logger,
      )
    : undefined;
  leadership?.begin(() => orchestrator.start(broker.host, broker.port, broker.metrics.registry));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn(`${signal} again: exiting without draining`);
      process.exit(130);
    }
    stopping = true;
    logger.info(`${signal} received: draining and shutting down`);
    Promise.resolve(leadership?.close())
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
  if (broker.telemetry) {
    const env = process.env;
    const to =
      config.telemetry.otlpEndpoint ??
      env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      env.OTEL_EXPORTER_OTLP_ENDPOINT;
    logger.info({ otlpEndpoint: to }, `tracing: spans exported over OTLP/HTTP to ${to}`);
  }
  // Ready only once a signal drains: whoever waits for this line may stop the broker at once.
  const scheme = config.tls.cert ? "mq9s" : "mq9";
  const http = broker.http;
  if (broker.cluster) {
    logger.info(
      { node: broker.cluster.options.nodeId, nats: config.cluster.nats, httpPort: http?.port },
      `mq9 cluster node ${broker.cluster.options.nodeId} ready: clients connect to ${config.cluster.nats.join(", ")}; HTTP on http://${http?.host}:${http?.port}`,
    );
    if (config.cluster.httpWithoutAuth) {
      logger.warn(
        { httpPort: http?.port },
        `--http-without-auth: the HTTP API of this node (http://${http?.host}:${http?.port}: mailboxes, messages, agents, MCP, A2A, the dashboard) is open to anyone who reaches it, with the node's rights, although its NATS side is secured; give it --token to close it`,
      );
    }
  } else
    logger.info(
      {
        host: broker.host,
        port: broker.port,
        httpPort: http?.port,
        ...(clustered?.store
          ? { store: clustered.store.describe() }
          : { data: config.storage.data, sync: config.storage.sync }),
      },
      `mq9 broker ready on ${scheme}://${broker.host}:${broker.port}; HTTP on http://${http?.host}:${http?.port} (dashboard at /, /api/v1, /healthz, /metrics, /mcp, /a2a)`,
    );
  const users = config.auth.users;
  if (users !== undefined && !broker.cluster) {
    const admins = users.filter((u) => u.admin === true).length;
    logger.info(
      { users: users.length, admins },
      `${users.length} users configured: clients are isolated (own replies and inboxes only, mailboxes and registrations belong to their creators); the HTTP routes take admin users only`,
    );
  }
}
