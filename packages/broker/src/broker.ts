import { Defaults, isMq9Subject } from "@mq9/protocol";
import type { FastifyInstance } from "fastify";
import { UserDirectory } from "./auth/index.js";
import { BrokerDefaults } from "./broker-defaults.js";
import { type ClusterNode, startClusterNode } from "./cluster/cluster-node.js";
import type { ClusterOptions } from "./cluster/cluster-options.js";
import { MessagingEngine } from "./engine/messaging-engine.js";
import type { Notifier } from "./engine/notifier.js";
import { BrokerMetrics } from "./http/broker-metrics.js";
import { HttpServer, type HttpServerOptions } from "./http/http-server.js";
import type { RestApi, RestApiOptions } from "./http/rest/rest-api.js";
import { type Logger, silentLogger } from "./logger.js";
import { NatsListener, type NatsListenerOptions } from "./nats/index.js";
import type { Registry, RegistryFactory } from "./registry.js";
import { Mq9Service } from "./service/mq9-service.js";
import { SqliteStore, type SyncMode } from "./store/sqlite-store.js";
import type { Store } from "./store/store.js";

export interface BrokerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Folder of the embedded SQLite store. */
  dataDir?: string;
  sync?: SyncMode;
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
  /** Liveness: how often idle clients are pinged (nats-server's ping_interval). */
  pingIntervalMs?: number;
  /** Liveness: unanswered PINGs before a client is closed as stale (nats-server's ping_max). */
  maxPingsOut?: number;
  leaseMs?: number;
  maxWaitMs?: number;
  fetchMaxBytes?: number;
  defaultMailboxTtl?: number;
  sweepIntervalMs?: number;
  /**
   * Opens the agent registry (AGENT.* subjects), e.g. `registryFactory(settings)` from
   * `@mq9/registry`; without one, AGENT.* requests answer that the registry is off.
   */
  registry?: RegistryFactory;
  /**
   * Cluster mode: serve `$mq9.AI.>` from these NATS servers (a queue group shared with the other
   * nodes) instead of the embedded listener; needs a shared `store` (PostgresStore).
   */
  cluster?: ClusterOptions;
  /** The HTTP server (/healthz, /metrics, routes of higher layers); off unless given. */
  http?: BrokerHttpOptions;
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
  const challenge = parts.users?.httpChallenge ?? "";
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

/** One mq9 broker: store + engine + embedded NATS-protocol listener. */
export class Broker {
  private closing?: Promise<void>;
  private restApi?: RestApi;
  private markClosing: () => void = () => {};

  private constructor(
    readonly host: string,
    readonly port: number,
    readonly engine: MessagingEngine,
    readonly metrics: BrokerMetrics,
    private readonly listener: NatsListener | undefined,
    private readonly store: Store,
    readonly http?: HttpServer,
    readonly registry?: Registry,
    /** Set in cluster mode: the node's NATS attachment. */
    readonly cluster?: ClusterNode,
  ) {}

  /** Opens the store, starts background work and listens; resolves once connections are accepted. */
  static async start(options: BrokerOptions = {}): Promise<Broker> {
    if (options.cluster) return Broker.startInCluster(options, options.cluster);
    const logger = options.logger ?? silentLogger;
    const store =
      options.store ??
      new SqliteStore({
        dataDir: options.dataDir ?? BrokerDefaults.dataDir,
        sync: options.sync,
        onRowWorkerFailed: (err) =>
          logger.warn(
            { err },
            "store: the worker writing message rows failed; the main thread writes them now",
          ),
        onCorruptRecord: (err) =>
          logger.error(
            { err, segment: err.segment, at: err.at },
            "store: a record of the message log does not match its checksum; its messages are not served",
          ),
      });
    const engine = new MessagingEngine({
      store,
      notifier: options.notifier,
      logger,
      leaseMs: options.leaseMs,
      maxWaitMs: options.maxWaitMs,
      fetchMaxBytes: options.fetchMaxBytes,
      defaultMailboxTtl: options.defaultMailboxTtl,
      sweepIntervalMs: options.sweepIntervalMs,
    });
    let listener: NatsListener;
    try {
      listener = new NatsListener({
        host: options.host ?? "127.0.0.1",
        port: options.port ?? Defaults.port,
        maxPayload: options.maxPayload ?? Defaults.maxPayload,
        maxConnections: options.maxConnections,
        maxPendingBytes: options.maxPendingBytes,
        auth: options.auth,
        authThrottle: options.authThrottle,
        tls: options.tls,
        pingIntervalMs: options.pingIntervalMs,
        maxPingsOut: options.maxPingsOut,
        serverName: "mq9",
        logger,
      });
    } catch (err) {
      await store.close();
      throw err;
    }
    const metrics = new BrokerMetrics(() => listener.connectionCount);
    let registry: Registry | undefined;
    try {
      registry = await options.registry?.({
        dataDir: options.dataDir ?? BrokerDefaults.dataDir,
        sync: options.sync,
        logger,
        sweepIntervalMs: options.sweepIntervalMs,
        maxPayload: options.maxPayload ?? Defaults.maxPayload,
        store,
      });
    } catch (err) {
      await store.close();
      throw err;
    }
    if (registry) metrics.watchRegistry(registry);
    if (store instanceof SqliteStore) metrics.watchStore(() => store.logStatus());
    const service = new Mq9Service(engine, logger, metrics, registry, listener.isolatesClients);
    // One abort signal per client, fired when its connection closes (ends its long-polls).
    const clients = new Map<number, AbortController>();
    const clientSignal = (clientId: number) => {
      let controller = clients.get(clientId);
      if (!controller) {
        controller = new AbortController();
        clients.set(clientId, controller);
      }
      return controller.signal;
    };
    listener.setService(
      isMq9Subject,
      (request) => {
        // Built field by field: spreading the request cost more than the rest of this callback.
        const { subject, header, payload, reply: to, clientId, principal } = request;
        const signal = clientSignal(clientId);
        service.answer({ subject, header, payload, signal, principal }, (reply, prompt) => {
          if (to) listener.reply(to, reply, prompt, clientId);
        });
      },
      (clientId) => {
        clients.get(clientId)?.abort();
        clients.delete(clientId);
      },
    );
    let closing = false;
    let http: HttpServer | undefined;
    let restApi: RestApi | undefined;
    try {
      const address = await listener.listen();
      if (options.http) {
        ({ server: http, restApi } = await startHttp(
          options.http,
          {
            host: options.http.host ?? address.host,
            metrics,
            users: UserDirectory.from(options.auth),
            logger,
            health: () => {
              // "full": writes fail for lack of space (reads go on); the broker recovers by itself.
              const storage = store instanceof SqliteStore ? store.storageState() : "ok";
              return { ok: !closing && storage === "ok", connections: listener.connectionCount, storage };
            },
          },
          { service, engine, registry, connections: () => listener.connectionCount, version: "1.0.0" },
        ));
        // `mq9 task …` and other HTTP tools given only the broker's address find the HTTP port here.
        listener.advertise({ mq9_http_port: http.port });
      }
      engine.start();
      const broker = new Broker(address.host, address.port, engine, metrics, listener, store, http, registry);
      broker.restApi = restApi;
      broker.markClosing = () => {
        closing = true;
      };
      return broker;
    } catch (err) {
      await listener.close();
      await registry?.close();
      await store.close();
      throw err;
    }
  }

  /** Number of open client connections of the embedded listener. */
  get connectionCount(): number {
    return this.listener?.connectionCount ?? 0;
  }

  /**
   * One node of a cluster: the same engine and service over a shared store, attached to the
   * NATS cluster (see cluster/cluster-node.ts) instead of listening itself.
   */
  private static async startInCluster(options: BrokerOptions, cluster: ClusterOptions): Promise<Broker> {
    const logger = options.logger ?? silentLogger;
    const store = options.store;
    if (!store) throw new Error("cluster mode needs a shared store: pass a PostgresStore (--postgres)");
    let node: ClusterNode | undefined;
    let registry: Registry | undefined;
    try {
      node = await startClusterNode(cluster, logger);
      const engine = new MessagingEngine({
        store,
        notifier: options.notifier ?? node.notifier,
        logger,
        leaseMs: options.leaseMs,
        maxWaitMs: options.maxWaitMs,
        fetchMaxBytes: options.fetchMaxBytes,
        defaultMailboxTtl: options.defaultMailboxTtl,
        sweepIntervalMs: options.sweepIntervalMs,
      });
      const metrics = new BrokerMetrics(() => 0);
      node.watch(metrics, store);
      registry = await options.registry?.({
        dataDir: options.dataDir ?? BrokerDefaults.dataDir,
        sync: options.sync,
        logger,
        sweepIntervalMs: options.sweepIntervalMs,
        store,
        node: node.instance,
      });
      if (registry) metrics.watchRegistry(registry);
      const service = new Mq9Service(engine, logger, metrics, registry);
      let closing = false;
      let http: HttpServer | undefined;
      let restApi: RestApi | undefined;
      if (options.http) {
        const clusterNode = node;
        ({ server: http, restApi } = await startHttp(
          options.http,
          {
            host: options.http.host ?? options.host ?? "127.0.0.1",
            metrics,
            users: UserDirectory.from(options.auth),
            logger,
            health: () => ({ ...clusterNode.health(), ok: !closing && clusterNode.health().ok }),
          },
          // A node has no listener of its own: its clients are the cluster's.
          { service, engine, registry, connections: () => 0, version: "1.0.0" },
        ));
      }
      engine.start();
      node.serve(service);
      const first = new URL(
        cluster.servers[0].includes("://") ? cluster.servers[0] : `nats://${cluster.servers[0]}`,
      );
      const broker = new Broker(
        first.hostname,
        Number(first.port || 4222),
        engine,
        metrics,
        undefined,
        store,
        http,
        registry,
        node,
      );
      broker.restApi = restApi;
      broker.markClosing = () => {
        closing = true;
      };
      logger.info(
        { node: cluster.nodeId, servers: cluster.servers },
        `cluster node ${cluster.nodeId} serving $mq9.AI.> in queue group ${cluster.queueGroup ?? "mq9"}`,
      );
      return broker;
    } catch (err) {
      await node?.close();
      await registry?.close();
      await store.close();
      throw err;
    }
  }

  /** Graceful stop: answers what is in flight, flushes clients, closes the store. Idempotent. */
  close(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      this.markClosing();
      this.restApi?.close();
      await this.http?.close();
      // No new requests from the cluster while the engine finishes the ones in hand.
      await this.cluster?.stopReceiving();
      await this.engine.close();
      await this.cluster?.close(options.drainTimeoutMs ?? 5_000);
      await this.listener?.close({ drainTimeoutMs: options.drainTimeoutMs ?? 5_000 });
      await this.registry?.close();
      await this.store.close();
    })();
    return this.closing;
  }
}
