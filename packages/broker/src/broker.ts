import type { FastifyInstance } from "fastify";
import { AuthGuard } from "./auth/index.js";
import { checkStoredOwners } from "./auth/stored-owners.js";
import { BrokerDefaults } from "./broker-defaults.js";
import type { ClusterNode } from "./cluster/cluster-node.js";
import type { ClusterOptions } from "./cluster/cluster-options.js";
import { MessagingEngine } from "./engine/messaging-engine.js";
import type { Notifier } from "./engine/notifier.js";
import { BrokerMetrics } from "./http/broker-metrics.js";
import { HttpServer, type HttpServerOptions } from "./http/http-server.js";
import type { RestApi, RestApiOptions } from "./http/rest/rest-api.js";
import { type Logger, silentLogger } from "./logger.js";
import type { NatsListenerOptions } from "./nats/index.js";
import type { Registry, RegistryFactory } from "./registry.js";
import { Mq9Service } from "./service/mq9-service.js";
import type { RequestObserver } from "./service/request-observer.js";
import { ServerInfo } from "./service/server-info.js";
import { SqliteStore, type SyncMode } from "./store/sqlite-store.js";
import type { Store } from "./store/store.js";
import { loadOtlpTelemetry } from "./telemetry/load-otlp.js";
import type { OtlpTelemetry } from "./telemetry/otlp-telemetry.js";
import type { TelemetryOptions } from "./telemetry/telemetry-options.js";
import type { BrokerTransport } from "./transport/broker-transport.js";
import { ClusterTransport } from "./transport/cluster-transport.js";
import { EmbeddedTransport } from "./transport/embedded-transport.js";

export interface BrokerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Folder of the embedded SQLite store. */
  dataDir?: string;
  sync?: SyncMode;
  /** Memory for the newest messages of the embedded store (see BrokerDefaults.messageCacheBytes); 0: none. */
  messageCacheBytes?: number;
  /** Another Store (e.g. a shared database); replaces the embedded one. */
  store?: Store;
  notifier?: Notifier;
  maxPayload?: number;
  maxConnections?: number;
  maxPendingBytes?: number;
  /** One shared token or user/password, or a list of users with permissions (see docs/security.md). */
  auth?: NatsListenerOptions["auth"];
  authThrottle?: NatsListenerOptions["authThrottle"];
  tls?: NatsListenerOptions["tls"];
  /** With users: how long a reply inbox stays bound to its user after its connection closed (docs/security.md). */
  inboxGraceMs?: number;
  /** Liveness: how often idle clients are pinged (nats-server's ping_interval). */
  pingIntervalMs?: number;
  /** Liveness: unanswered PINGs before a client is closed as stale (nats-server's ping_max). */
  maxPingsOut?: number;
  leaseMs?: number;
  maxWaitMs?: number;
  fetchMaxBytes?: number;
  defaultMailboxTtlSeconds?: number;
  /** How long a SEND's idempotency key is remembered (default BrokerDefaults.dedupWindowMs). */
  dedupWindowMs?: number;
  sweepIntervalMs?: number;
  /**
   * Opens the agent registry (AGENT.* subjects), e.g. `registryFactory(settings)` from
   * `@mq9/registry`; without one, AGENT.* requests answer that the registry is off.
   */
  registry?: RegistryFactory;
  /**
   * Cluster mode: serve `$mq9.AI.>` from these NATS servers (a queue group shared with the other
   * nodes) instead of the embedded listener; needs a shared `store` (`capabilities.shared`:
   * PostgresStore).
   */
  cluster?: ClusterOptions;
  /** The HTTP server (/healthz, /metrics, routes of higher layers); off unless given. */
  http?: BrokerHttpOptions;
  /** Export the broker's spans over OTLP/HTTP (docs/observability.md); off unless given. */
  telemetry?: TelemetryOptions;
  logger?: Logger;
}

export interface BrokerHttpOptions {
  /** Defaults to the listener's host. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** Mounts higher layers' routes; `api` takes routes that belong in the REST API v1 and its OpenAPI document. */
  routes?: (app: FastifyInstance, api: RestApi) => void | Promise<void>;
  /** Paths served without the broker's credentials, besides /healthz, /metrics and /api/v1/auth. */
  openPath?: (path: string) => boolean;
  /** DNS-rebinding protection (see HttpServerOptions.allowedHosts). */
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  /** The registry's ARD face: publisher domain, where cards are served (docs/registry.md, "ARD"). */
  ard?: RestApiOptions["ard"];
  /** The dashboard history's sampling (docs/dashboard.md); tests shorten the interval. */
  history?: RestApiOptions["history"];
}

/** The HTTP server of a broker, with the REST API v1 mounted before the higher layers' routes. */
async function startHttp(
  http: BrokerHttpOptions,
  parts: Omit<HttpServerOptions, "routes" | "openPath" | "port" | "allowedHosts" | "allowedOrigins">,
  api: Omit<RestApiOptions, "metrics" | "auth" | "logger">,
): Promise<{ server: HttpServer; restApi?: RestApi }> {
  // Loaded with the HTTP server only: its schemas cost every other user of this package (the CLI's commands).
  const { REST_OPEN_PATHS, RestApi } = await import("./http/rest/rest-api.js");
  let restApi: RestApi | undefined;
  const challenge = parts.auth?.users.httpChallenge ?? "";
  const schemes = [
    ...(challenge.includes("Bearer") ? (["bearer"] as const) : []),
    ...(challenge.includes("Basic") ? (["basic"] as const) : []),
  ];
  const server = await HttpServer.start({
    ...parts,
    port: http.port,
    allowedHosts: http.allowedHosts,
    allowedOrigins: http.allowedOrigins,
    routes: async (app) => {
      restApi = new RestApi(app, { ...api, metrics: parts.metrics, auth: schemes, logger: parts.logger });
      await http.routes?.(app, restApi);
    },
    openPath: (path) => REST_OPEN_PATHS.includes(path) || http.openPath?.(path) === true,
  });
  return { server, restApi };
}

/** The embedded store, its failures told to the broker's logger. */
function openEmbeddedStore(options: BrokerOptions, logger: Logger): SqliteStore {
  return new SqliteStore({
    dataDir: options.dataDir ?? BrokerDefaults.dataDir,
    sync: options.sync,
    recentMessageBytes: options.messageCacheBytes ?? BrokerDefaults.messageCacheBytes,
    onRowWorkerFailed: (err) =>
      logger.warn({ err }, "store: the worker writing message rows failed; the main thread writes them now"),
    onCorruptRecord: (err) =>
      logger.error(
        { err, segment: err.segment, at: err.at },
        "store: a record of the message log does not match its checksum; its messages are not served",
      ),
  });
}

/** How requests reach this broker: the embedded listener, or a cluster's queue group. */
async function openTransport(
  options: BrokerOptions,
  store: Store,
  logger: Logger,
  authGuard: AuthGuard | undefined,
): Promise<BrokerTransport> {
  if (options.cluster) {
    return ClusterTransport.connect(options.cluster, logger, options.host ?? BrokerDefaults.host, store);
  }
  return new EmbeddedTransport(
    {
      host: options.host,
      port: options.port,
      maxPayload: options.maxPayload,
      maxConnections: options.maxConnections,
      maxPendingBytes: options.maxPendingBytes,
      auth: options.auth,
      authThrottle: options.authThrottle,
      authGuard,
      tls: options.tls,
      inboxGraceMs: options.inboxGraceMs,
      pingIntervalMs: options.pingIntervalMs,
      maxPingsOut: options.maxPingsOut,
    },
    store,
    logger,
  );
}

/**
 * One mq9 broker: store + engine + registry + service, reached through a transport (the
 * embedded NATS-protocol listener, or a cluster's queue group), and an optional HTTP server.
 */
export class Broker {
  private closing?: Promise<void>;
  private restApi?: RestApi;
  private markClosing: () => void = () => {};
  /** Set when `telemetry` is configured: the OTLP export of the broker's spans. */
  telemetry?: Pick<OtlpTelemetry, "flush">;
  private telemetryExport?: OtlpTelemetry;

  private constructor(
    /** Where clients connect: the listener's address, or the cluster's first NATS server. */
    readonly host: string,
    readonly port: number,
    readonly engine: MessagingEngine,
    readonly metrics: BrokerMetrics,
    private readonly transport: BrokerTransport,
    private readonly store: Store,
    readonly http?: HttpServer,
    readonly registry?: Registry,
  ) {}

  /**
   * Opens the store and the transport, starts background work and serves; resolves once
   * requests are accepted. Cluster mode (`options.cluster`) takes the same path over a shared
   * store, attached to the NATS cluster instead of listening itself.
   */
  static async start(options: BrokerOptions = {}): Promise<Broker> {
    const logger = options.logger ?? silentLogger;
    if (options.cluster && !options.store?.capabilities.shared) {
      throw new Error("cluster mode needs a shared store: pass a PostgresStore (--postgres)");
    }
    const store = options.store ?? openEmbeddedStore(options, logger);
    let transport: BrokerTransport | undefined;
    let registry: Registry | undefined;
    let telemetry: OtlpTelemetry | undefined;
    try {
      if (options.telemetry) {
        // Only now: a broker without OTLP export never loads the OpenTelemetry SDK.
        const { OtlpTelemetry } = await loadOtlpTelemetry();
        telemetry = OtlpTelemetry.start(options.telemetry);
      }
      // One guard for both ports: a guesser is slowed on the HTTP port by failures on the NATS port too.
      const authGuard = AuthGuard.from(options.auth, options.authThrottle, logger);
      transport = await openTransport(options, store, logger, authGuard);
      const served = transport;
      const metrics = new BrokerMetrics(() => served.connectionCount());
      const engine = new MessagingEngine({
        store,
        notifier: options.notifier ?? transport.notifier,
        logger,
        leaseMs: options.leaseMs,
        maxWaitMs: options.maxWaitMs,
        fetchMaxBytes: options.fetchMaxBytes,
        defaultMailboxTtlSeconds: options.defaultMailboxTtlSeconds,
        dedupWindowMs: options.dedupWindowMs,
        sweepIntervalMs: options.sweepIntervalMs,
        onDeadLettered: (_address, count) => metrics.deadLettered.inc(count),
      });
      served.watch(metrics, store);
      registry = await options.registry?.({
        dataDir: options.dataDir ?? BrokerDefaults.dataDir,
        sync: options.sync,
        logger,
        sweepIntervalMs: options.sweepIntervalMs,
        sharedDatabase: store.sharedDatabase(),
        ...served.registryScope,
      });
      if (registry) metrics.watchRegistry(registry);
      if (authGuard) metrics.watchAuth(authGuard);
      if (served.isolatesClients) {
        await checkStoredOwners(authGuard?.users, store, registry, logger);
      }
      if (options.store === undefined) metrics.watchDisk(options.dataDir ?? BrokerDefaults.dataDir);
      const serverInfo = new ServerInfo({
        store: () => store.describe(),
        connections: () => served.connectionCount(),
        subscriptions: () => served.subscriptionCount(),
        dataDir: options.store === undefined ? (options.dataDir ?? BrokerDefaults.dataDir) : undefined,
        cluster: () => {
          const view = served.clusterView();
          if (view === undefined) return null;
          const peers = view.nodes.map(({ node, state, self }) => ({ node, state, self }));
          return { cluster: view.cluster, node: view.node, peers };
        },
      });
      const otlpMetrics = telemetry?.requestMetrics;
      const observer: RequestObserver = otlpMetrics
        ? {
            observe: (op, failed, seconds, mailAddress) => {
              metrics.observe(op, failed, seconds, mailAddress);
              otlpMetrics.observe(op, failed, seconds);
            },
          }
        : metrics;
      const service = new Mq9Service(
        engine,
        logger,
        observer,
        registry,
        served.isolatesClients,
        serverInfo,
        telemetry,
      );
      const address = await served.serve(service);
      let closing = false;
      metrics.watchHealth(() => !closing && served.health().ok);
      let http: HttpServer | undefined;
      let restApi: RestApi | undefined;
      if (options.http) {
        ({ server: http, restApi } = await startHttp(
          options.http,
          {
            host: options.http.host ?? served.defaultHttpHost,
            metrics,
            auth: authGuard,
            logger,
            health: () => {
              const health = served.health();
              const warning = registry?.status().warning;
              return { ...health, ok: !closing && health.ok, ...(warning ? { registry: { warning } } : {}) };
            },
          },
          {
            service,
            engine,
            registry,
            connections: () => served.connectionCount(),
            connectionList: () => served.connections(),
            cluster: () => served.clusterView(),
            forgetClusterNode: (node) => served.forgetClusterNode(node),
            version: "1.0.0",
            history: options.http.history,
            ard: options.http.ard,
          },
        ));
        served.advertiseHttp(http.port, http.host);
      }
      engine.start();
      const broker = new Broker(address.host, address.port, engine, metrics, served, store, http, registry);
      broker.restApi = restApi;
      broker.telemetry = telemetry;
      broker.telemetryExport = telemetry;
      broker.markClosing = () => {
        closing = true;
      };
      return broker;
    } catch (err) {
      await transport?.close();
      await registry?.close();
      await store.close();
      await telemetry?.shutdown();
      throw err;
    }
  }

  /** Number of open client connections of the embedded listener (0 for a cluster node). */
  get connectionCount(): number {
    return this.transport.connectionCount();
  }

  /** Set in cluster mode: this process as a node of the cluster. */
  get cluster(): ClusterNode | undefined {
    return this.transport instanceof ClusterTransport ? this.transport.node : undefined;
  }

  /** Graceful stop: answers what is in flight, flushes clients, closes the store. Idempotent. */
  close(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      this.markClosing();
      this.restApi?.close();
      await this.http?.close();
      // No new requests (from a cluster) while the engine finishes the ones in hand.
      await this.transport.stopReceiving();
      await this.engine.close();
      await this.transport.close(options.drainTimeoutMs ?? 5_000);
      await this.registry?.close();
      await this.store.close();
      await this.telemetryExport?.shutdown();
    })();
    return this.closing;
  }
}
