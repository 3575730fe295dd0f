import type { ForgetOutcome } from "../cluster/cluster-members.js";
import type { ClusterView } from "../cluster/cluster-node.js";
import type { Notifier } from "../engine/notifier.js";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { ConnectionStats } from "../nats/client-connection.js";
import type { Store } from "../store/store.js";
import type { Mq9RequestHandler } from "./mq9-request.js";

/** Where a broker's clients connect. */
export interface BrokerAddress {
  host: string;
  port: number;
}

/** What /healthz reports of a transport: `ok`, and details of its own. */
export interface TransportHealth {
  ok: boolean;
  [detail: string]: unknown;
}

/**
 * How requests reach a broker's service: the embedded NATS-protocol listener, or a queue group
 * of an existing NATS cluster. Broker.start builds the same engine, registry, service and HTTP
 * server over either. A transport turns what it receives into Mq9Requests (mq9-request.ts) for
 * the handler that serve() is given, and sends the handler's replies back.
 */
export interface BrokerTransport {
  /** Wakes long-polls (across nodes, in a cluster); undefined: the engine's own, in-process. */
  readonly notifier?: Notifier;
  /** True when users are configured and the service must check who owns what. */
  readonly isolatesClients: boolean;
  /** What the registry factory is told of the transport (see RegistryContext). */
  readonly registryScope: { maxPayload?: number; node?: string; cluster?: boolean };
  /** The HTTP server's host when its options give none. */
  readonly defaultHttpHost: string;
  connectionCount(): number;
  /** Each client connection's figures; undefined where nats-server holds the connections. */
  connections(): ConnectionStats[] | undefined;
  /** Subscriptions held on the broker's own listener; undefined where nats-server holds them. */
  subscriptionCount(): number | undefined;
  /** Adds the transport's gauges, and starts the store's watch of itself (Store.watch). */
  watch(metrics: BrokerMetrics, store: Store): void;
  health(): TransportHealth;
  /** Starts handing requests to `handler`; resolves with where clients connect. */
  serve(handler: Mq9RequestHandler): Promise<BrokerAddress>;
  /** Tells clients (or a cluster's other nodes) where the HTTP server listens, where the transport can. */
  advertiseHttp(port: number, host: string): void;
  /** The cluster's nodes as this one hears them; undefined for a broker of its own. */
  clusterView(): ClusterView | undefined;
  /** Forgets a cluster node that is not up; undefined on a broker of its own. */
  forgetClusterNode(node: string): ForgetOutcome | undefined;
  /** Takes no new requests (those in hand are still answered). */
  stopReceiving(): Promise<void>;
  /** Flushes replies (up to `drainTimeoutMs`, else the transport's default) and disconnects. */
  close(drainTimeoutMs?: number): Promise<void>;
}
