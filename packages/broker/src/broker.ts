import { Defaults, isMq9Subject } from "@mq9/protocol";
import type { FastifyInstance } from "fastify";
import { MessagingEngine } from "./engine/messaging-engine.js";
import type { Notifier } from "./engine/notifier.js";
import { BrokerMetrics } from "./http/broker-metrics.js";
import { HttpServer } from "./http/http-server.js";
import { type Logger, silentLogger } from "./logger.js";
import { NatsListener, type NatsListenerOptions } from "./nats/index.js";
import { openRegistry, type RegistrySettings } from "./registry/open-registry.js";
import type { Registry } from "./registry/registry.js";
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
  auth?: NatsListenerOptions["auth"];
  tls?: NatsListenerOptions["tls"];
  leaseMs?: number;
  maxWaitMs?: number;
  fetchMaxBytes?: number;
  defaultMailboxTtl?: number;
  sweepIntervalMs?: number;
  /** The agent registry (AGENT.* subjects); `false` turns it off. */
  registry?: RegistrySettings | false;
  /** The HTTP server (/healthz, /metrics, routes of higher layers); off unless given. */
  http?: BrokerHttpOptions;
  logger?: Logger;
}

export interface BrokerHttpOptions {
  /** Defaults to the listener's host. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  routes?: (app: FastifyInstance) => void | Promise<void>;
}

/** One mq9 broker: store + engine + embedded NATS-protocol listener. */
export class Broker {
  private closing?: Promise<void>;
  private markClosing: () => void = () => {};

  private constructor(
    readonly host: string,
    readonly port: number,
    readonly engine: MessagingEngine,
    readonly metrics: BrokerMetrics,
    private readonly listener: NatsListener,
    private readonly store: Store,
    readonly http?: HttpServer,
    readonly registry?: Registry,
  ) {}

  /** Opens the store, starts background work and listens; resolves once connections are accepted. */
  static async start(options: BrokerOptions = {}): Promise<Broker> {
    const logger = options.logger ?? silentLogger;
    const store =
      options.store ??
      new SqliteStore({
        dataDir: options.dataDir ?? "./mq9-data",
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
    const listener = new NatsListener({
      host: options.host ?? "127.0.0.1",
      port: options.port ?? Defaults.port,
      maxPayload: options.maxPayload ?? Defaults.maxPayload,
      maxConnections: options.maxConnections,
      maxPendingBytes: options.maxPendingBytes,
      auth: options.auth,
      tls: options.tls,
      serverName: "mq9",
      logger,
    });
    const metrics = new BrokerMetrics(() => listener.connectionCount);
    let registry: Registry | undefined;
    try {
      registry =
        options.registry === false
          ? undefined
          : await openRegistry(options.registry ?? {}, {
              dataDir: options.dataDir ?? "./mq9-data",
              sync: options.sync,
              logger,
              sweepIntervalMs: options.sweepIntervalMs,
            });
    } catch (err) {
      await store.close();
      throw err;
    }
    if (registry) metrics.watchRegistry(registry);
    if (store instanceof SqliteStore) metrics.watchStore(() => store.logStatus());
    const service = new Mq9Service(engine, logger, metrics, registry);
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
        const { subject, header, payload, reply: to } = request;
        const signal = clientSignal(request.clientId);
        service.answer({ subject, header, payload, signal }, (reply, prompt) => {
          if (to) listener.reply(to, reply, prompt);
        });
      },
      (clientId) => {
        clients.get(clientId)?.abort();
        clients.delete(clientId);
      },
    );
    let closing = false;
    let http: HttpServer | undefined;
    try {
      const address = await listener.listen();
      if (options.http) {
        http = await HttpServer.start({
          host: options.http.host ?? address.host,
          port: options.http.port,
          metrics,
          routes: options.http.routes,
          auth: options.auth,
          logger,
          health: () => {
            // "full": writes fail for lack of space (reads go on); the broker recovers by itself.
            const storage = store instanceof SqliteStore ? store.storageState() : "ok";
            return { ok: !closing && storage === "ok", connections: listener.connectionCount, storage };
          },
        });
      }
      engine.start();
      const broker = new Broker(address.host, address.port, engine, metrics, listener, store, http, registry);
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

  /** Graceful stop: answers what is in flight, flushes clients, closes the store. Idempotent. */
  close(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      this.markClosing();
      await this.http?.close();
      await this.engine.close();
      await this.listener.close({ drainTimeoutMs: options.drainTimeoutMs ?? 5_000 });
      await this.registry?.close();
      await this.store.close();
    })();
    return this.closing;
  }
}
