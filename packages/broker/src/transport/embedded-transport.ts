import { hostname } from "node:os";
import { Defaults } from "@mq9/protocol";
import { BrokerDefaults } from "../broker-defaults.js";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { ConnectionStats } from "../nats/client-connection.js";
import { NatsListener, type NatsListenerOptions } from "../nats/index.js";
import type { Store } from "../store/store.js";
import type { BrokerAddress, BrokerTransport, TransportHealth } from "./broker-transport.js";
import type { Mq9RequestHandler } from "./mq9-request.js";

/**
 * The embedded listener's settings, as BrokerOptions give them; the bound reply inboxes are kept
 * where the store keeps them (Store.inboxBindings).
 */
export type EmbeddedTransportOptions = Omit<NatsListenerOptions, "serverName" | "logger" | "inboxBindings">;

/** A broker of its own: the embedded NATS-protocol listener, clients connect to it. */
export class EmbeddedTransport implements BrokerTransport {
  readonly notifier = undefined;
  readonly defaultHttpHost: string;
  private readonly listener: NatsListener;
  private readonly maxPayload: number;
  private readonly logger: Logger;
  private address?: BrokerAddress;

  /** Throws on settings the listener refuses (nothing is opened then). */
  constructor(
    options: EmbeddedTransportOptions,
    /** Its health is part of the broker's. */
    private readonly store: Store,
    logger: Logger,
  ) {
    const host = options.host ?? BrokerDefaults.host;
    this.maxPayload = options.maxPayload ?? Defaults.maxPayload;
    this.defaultHttpHost = host;
    this.listener = new NatsListener({
      ...options,
      host,
      port: options.port ?? Defaults.port,
      maxPayload: this.maxPayload,
      serverName: "mq9",
      inboxBindings: store.inboxBindings(),
      logger,
    });
    this.logger = logger;
  }

  get isolatesClients(): boolean {
    return this.listener.isolatesClients;
  }

  /**
   * On a shared store (PostgreSQL) the registry lives in its database too, under this process's
   * name, as a cluster node's does; on SQLite it stays in the data directory.
   */
  get registryScope(): { maxPayload: number; node?: string } {
    const node = this.store.capabilities.shared ? `${hostname()}-${process.pid}` : undefined;
    return { maxPayload: this.maxPayload, node };
  }

  connectionCount(): number {
    return this.listener.connectionCount;
  }

  connections(): ConnectionStats[] {
    return this.listener.connections();
  }

  subscriptionCount(): number {
    return this.listener.subscriptionCount;
  }

  watch(metrics: BrokerMetrics, store: Store): void {
    store.watch({ metrics: metrics.registry, logger: this.logger, cluster: false });
  }

  /** The store's health, with the listener's connections. */
  health(): TransportHealth {
    const { ok, ...store } = this.store.health();
    return { ok, connections: this.listener.connectionCount, ...store };
  }

  /** The listener builds each request from a client's publish (see NatsListener.setService). */
  async serve(handler: Mq9RequestHandler): Promise<BrokerAddress> {
    this.listener.setService(handler);
    this.address = await this.listener.listen();
    return this.address;
  }

  clusterView(): undefined {
    return undefined;
  }

  forgetClusterNode(): undefined {
    return undefined;
  }

  advertiseHttp(port: number): void {
    // `mq9 task …` and other HTTP tools given only the broker's address find the HTTP port here.
    this.listener.advertise({ mq9_http_port: port });
  }

  async stopReceiving(): Promise<void> {}

  close(drainTimeoutMs?: number): Promise<void> {
    return this.listener.close({ drainTimeoutMs });
  }
}
