import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { NatsConnection } from "nats";
import { Gauge } from "prom-client";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { HeldDuties } from "../store/postgres/cluster-lock.js";
import type { Store, StoreHealth } from "../store/store.js";
import { connectionName, connectToCluster } from "./cluster-connection.js";
import {
  type ClusterMember,
  ClusterMembers,
  type ForgetOutcome,
  type NatsConnectionRef,
  PRESENCE_INTERVAL_MS,
  tally,
} from "./cluster-members.js";
import type { ClusterOptions } from "./cluster-options.js";
import { DROP_MISSING_AFTER_MS, HungNodes } from "./hung-nodes.js";
import { NatsNotifier } from "./nats-notifier.js";
import { RollCall, sharedIdWarning } from "./roll-call.js";
import { SystemAccount } from "./system-account.js";

/** The cluster as one node sees it: GET /api/v1/cluster. */
export interface ClusterView {
  /** The cluster's name (its schema's, made at the schema's creation). */
  cluster: string;
  node: string;
  nodes: ClusterMember[];
}

/** A bound HTTP address as another host reaches it: a wildcard bind by this machine's name. */
function httpUrlOf(host: string, port: number): string {
  const name = ["", "0.0.0.0", "::", "[::]"].includes(host) ? hostname() : host;
  return `http://${name.includes(":") && !name.startsWith("[") ? `[${name}]` : name}:${port}`;
}

/** A node's health before Broker.start had it watch its store. */
const NOT_WATCHED: StoreHealth = { ok: true, storage: "ok" };

/** GET /api/v1/cluster's answer: a node's view, or no cluster on a broker of its own. */
export type ClusterRoster = ({ clustered: true } & ClusterView) | { clustered: false; nodes: [] };

/**
 * What makes a broker a cluster node: its NATS connection, its place in the cluster (roll call,
 * presence, once-per-cluster duties), the notifier that wakes long-polls across nodes, and its
 * health. Requests reach it through the transport (transport/queue-group-requests.ts).
 */
export class ClusterNode {
  readonly notifier: NatsNotifier;
  /** This process's name in the cluster: the node id and a random suffix. */
  readonly instance: string;
  /** The shared store, once watched: its health is part of the node's. */
  private store?: Store;
  private rollCall?: RollCall;
  private members?: ClusterMembers;
  private hung?: HungNodes;
  private clusterId?: string;
  private duties?: HeldDuties;
  /** Where this node's HTTP server listens, for the roster. */
  private httpPort?: number;
  private httpUrl?: string;

  constructor(
    readonly options: ClusterOptions,
    readonly connection: NatsConnection,
    private readonly logger: Logger,
    /** Opt-in: the system-account connection that closes a hung node's connection. */
    private readonly system?: SystemAccount,
  ) {
    // Unique per process, so a node restarted under the same id never mistakes old news for its own.
    this.instance = options.instance ?? newClusterInstance(options.nodeId);
    this.notifier = new NatsNotifier(connection, this.instance, logger);
  }

  /** Whether the connection to a nats-server is up right now. */
  get connected(): boolean {
    return !this.connection.isClosed() && !this.connection.isDraining() && this.connection.info !== undefined;
  }

  /** The server this node is connected to now. */
  get server(): string | undefined {
    return this.connection.getServer() || undefined;
  }

  /** The connection requests come in on, as its nats-server knows it, while connected. */
  private get connectionRef(): NatsConnectionRef | undefined {
    const info = this.connected ? this.connection.info : undefined;
    if (!info) return undefined;
    const name = connectionName(this.options.nodeId, "broker");
    return { server_id: info.server_id, client_id: info.client_id, name };
  }

  /**
   * Answers roll calls with the name of this node's mq9 cluster (its schema's), after calling the
   * roll itself: refused when a node of another mq9 cluster answers, since both would take every
   * request of this NATS account; warned when a node of this one answers under the same id.
   */
  async join(
    clusterId: string,
    duties?: HeldDuties,
    endSessionsOf?: (instance: string) => Promise<number>,
  ): Promise<void> {
    const self = { node: this.options.nodeId, instance: this.instance, cluster: clusterId };
    this.clusterId = clusterId;
    this.duties = duties;
    this.rollCall = new RollCall(this.connection, self, this.logger);
    this.members = new ClusterMembers(
      this.connection,
      self,
      () => ({
        natsServer: this.server,
        natsConnection: this.connectionRef,
        httpPort: this.httpPort,
        httpUrl: this.httpUrl,
        duties: this.duties?.list() ?? [],
      }),
      this.logger,
      this.options.presenceIntervalMs,
      this.options.downRetentionMs,
    );
    const intervalMs = this.options.presenceIntervalMs ?? PRESENCE_INTERVAL_MS;
    this.hung = new HungNodes(this.members, this.logger, {
      // Never before the node is missing (three silent intervals): --drop-missing-after is above 6 s.
      dropAfterMs: Math.max(this.options.dropMissingAfterMs ?? DROP_MISSING_AFTER_MS, 3.5 * intervalMs),
      intervalMs,
      system: this.system,
      endSessionsOf,
      connected: () => this.connected,
    });
    const answers = await this.rollCall.call();
    if (answers.some((a) => a.cluster === clusterId && a.node === self.node)) {
      this.logger.warn(sharedIdWarning(self.node));
    }
    const strangers = answers.filter((a) => a.cluster !== clusterId);
    if (strangers.length === 0) return;
    const names = strangers.map((s) => s.node).join(", ");
    throw new Error(
      `another mq9 cluster already serves $mq9.AI.> on this NATS account (node ${names}, on another database or schema): both would store and answer every request. Give each mq9 cluster a NATS account or cluster of its own (docs/cluster.md), or give this node that cluster's --postgres and --postgres-schema`,
    );
  }

  /** Starts telling the other nodes of this one, once it takes requests. */
  start(): void {
    this.members?.start();
    this.hung?.start();
  }

  advertiseHttp(port: number, host: string): void {
    this.httpPort = port;
    this.httpUrl = this.options.httpUrl ?? httpUrlOf(host, port);
    this.members?.announce();
  }

  /** The nodes of the cluster as this node hears them; undefined before it joined one. */
  view(): ClusterView | undefined {
    if (!this.members || this.clusterId === undefined) return undefined;
    return { cluster: this.clusterId, node: this.options.nodeId, nodes: this.members.list() };
  }

  /** Drops a node that is not up from every node's roster (DELETE /api/v1/cluster/nodes/:node). */
  forget(node: string): ForgetOutcome {
    return this.members?.forget(node) ?? "unknown";
  }

  /** Gauges of the node's links; the shared store's health becomes part of the node's. */
  watch(metrics: BrokerMetrics, store: Store): void {
    this.store = store;
    const node = this;
    new Gauge({
      name: "mq9_cluster_nats_connected",
      help: "1 while this node is connected to a nats-server of the cluster",
      registers: [metrics.registry],
      collect() {
        this.set(node.connected ? 1 : 0);
      },
    });
    new Gauge({
      name: "mq9_cluster_nodes",
      help: "Nodes of the cluster this node hears (itself included), by state: up, missing (silent for three presence intervals) or down (silent for thirty, kept until forgotten)",
      labelNames: ["state"],
      registers: [metrics.registry],
      collect() {
        const nodes = tally(node.members?.list() ?? []);
        this.set({ state: "up" }, nodes.up);
        this.set({ state: "missing" }, nodes.missing);
        this.set({ state: "down" }, nodes.down);
      },
    });
    new Gauge({
      name: "mq9_cluster_duty",
      help: "1 while this node runs a once-per-cluster work (expiry, registry-expiry, orchestrator); the cluster's sum is 1 for each",
      labelNames: ["duty"],
      registers: [metrics.registry],
      collect() {
        const held = new Set(node.duties?.list());
        for (const duty of node.duties?.all() ?? []) this.set({ duty }, held.has(duty) ? 1 : 0);
      },
    });
  }

  /** The node's health; `refused`: why the nats-servers refuse it requests, when they do. */
  health(refused: string | undefined): { ok: boolean; [detail: string]: unknown } {
    const natsUp = this.connected;
    const nodes = this.members ? tally(this.members.list()) : undefined;
    const strangers = this.members?.strangers() ?? [];
    // The store's own details (PostgreSQL's `postgres`); whether it serves is part of `ok`.
    const { ok: storeOk, storage: _storage, ...store } = this.store?.health() ?? NOT_WATCHED;
    return {
      ok: natsUp && refused === undefined && storeOk && strangers.length === 0,
      node: this.options.nodeId,
      nats: { connected: natsUp, server: this.server, ...(refused ? { refused } : {}) },
      ...store,
      ...(nodes ? { nodes } : {}),
      ...(strangers.length > 0 ? { other_clusters: strangers } : {}),
    };
  }

  /** Tells the other nodes this one is going (it takes no more requests). */
  leave(): void {
    this.hung?.stop();
    this.members?.leave();
  }

  /** Leaves the cluster and closes the connection, flushing what is queued on it. */
  async close(): Promise<void> {
    this.hung?.stop();
    this.members?.leave();
    this.rollCall?.close();
    await this.system?.close();
    if (!this.connection.isClosed()) await this.connection.drain().catch(() => this.connection.close());
  }
}

/** A name for this process as a node: `<node id>/<hex token>`, unique per process. */
export function newClusterInstance(nodeId: string): string {
  return `${nodeId}/${randomBytes(4).toString("hex")}`;
}

/** Connects to the NATS cluster and returns the node (taking no requests: see ClusterTransport). */
export async function startClusterNode(options: ClusterOptions, logger: Logger): Promise<ClusterNode> {
  if (options.servers.length === 0)
    throw new Error("cluster mode needs at least one NATS server URL (--nats)");
  const connection = await connectToCluster(options, "broker", logger);
  if (!options.systemAccount) return new ClusterNode(options, connection, logger);
  try {
    const system = await SystemAccount.connect(options, options.systemAccount, logger);
    return new ClusterNode(options, connection, logger, system);
  } catch (err) {
    await connection.close();
    throw err;
  }
}
