import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { ReplyPayload } from "@mq9/protocol";
import type { NatsConnection } from "nats";
import { Gauge } from "prom-client";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { HeldDuties } from "../store/postgres/cluster-lock.js";
import type { Store, StoreHealth } from "../store/store.js";
import type { Mq9RequestHandler } from "../transport/mq9-request.js";
import { type ClusterMember, ClusterMembers, type ForgetOutcome, tally } from "./cluster-members.js";
import type { ClusterOptions } from "./cluster-options.js";
import { connectToCluster, NatsAttachment } from "./nats-attachment.js";
import { NatsNotifier } from "./nats-notifier.js";
import { RollCall, sharedIdWarning } from "./roll-call.js";

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

function replyBytes(reply: ReplyPayload): Uint8Array | string {
  if (typeof reply === "string") return reply;
  return Buffer.concat(reply.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece)));
}

/**
 * What makes a broker a cluster node: its NATS connection, the queue-group attachment that
 * feeds it requests, the notifier that wakes long-polls across nodes, and its health.
 */
export class ClusterNode {
  readonly notifier: NatsNotifier;
  /** This process's name in the cluster: the node id and a random suffix. */
  readonly instance: string;
  private readonly attachment: NatsAttachment;
  /** The shared store, once watched: its health is part of the node's. */
  private store?: Store;
  private rollCall?: RollCall;
  private members?: ClusterMembers;
  private clusterId?: string;
  private duties?: HeldDuties;
  /** Where this node's HTTP server listens, for the roster. */
  private httpPort?: number;
  private httpUrl?: string;

  constructor(
    readonly options: ClusterOptions,
    readonly connection: NatsConnection,
    private readonly logger: Logger,
  ) {
    // Unique per process, so a node restarted under the same id never mistakes old news for its own.
    this.instance = `${options.nodeId}/${randomBytes(4).toString("hex")}`;
    this.notifier = new NatsNotifier(connection, this.instance, logger);
    this.attachment = new NatsAttachment(connection, options.queueGroup ?? "mq9", logger);
  }

  /**
   * Answers roll calls with the name of this node's mq9 cluster (its schema's), after calling the
   * roll itself: refused when a node of another mq9 cluster answers, since both would take every
   * request of this NATS account; warned when a node of this one answers under the same id.
   */
  async join(clusterId: string, duties?: HeldDuties): Promise<void> {
    const self = { node: this.options.nodeId, instance: this.instance, cluster: clusterId };
    this.clusterId = clusterId;
    this.duties = duties;
    this.rollCall = new RollCall(this.connection, self, this.logger);
    this.members = new ClusterMembers(
      this.connection,
      self,
      () => ({
        natsServer: this.attachment.server,
        httpPort: this.httpPort,
        httpUrl: this.httpUrl,
        duties: this.duties?.list() ?? [],
      }),
      this.logger,
      this.options.presenceIntervalMs,
      this.options.downRetentionMs,
    );
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

  /** Hands every request of the queue group to the service, its reply back through NATS. */
  serve(handler: Mq9RequestHandler): void {
    this.attachment.serve((request) => {
      handler.answer(
        {
          subject: request.subject,
          header: request.header,
          payload: request.payload,
          undelivered: request.undelivered,
        },
        (reply) => request.reply(replyBytes(reply)),
      );
    });
    this.members?.start();
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

  /** Gauges of the node's links, and the shared store's watch of its database for /healthz. */
  watch(metrics: BrokerMetrics, store: Store): void {
    this.store = store;
    const node = this;
    new Gauge({
      name: "mq9_cluster_nats_connected",
      help: "1 while this node is connected to a nats-server of the cluster",
      registers: [metrics.registry],
      collect() {
        this.set(node.attachment.connected ? 1 : 0);
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
    store.watch({
      metrics: metrics.registry,
      logger: this.logger,
      cluster: true,
      // A node whose schema a newer mq9 migrated leaves the queue group: the new nodes take its requests.
      onRefused: (why) => {
        this.logger.error(`cluster node ${this.options.nodeId} stops taking requests: ${why}`);
        void this.attachment.stopReceiving();
      },
    });
  }

  health(): { ok: boolean; [detail: string]: unknown } {
    const natsUp = this.attachment.connected;
    const refused = this.attachment.refused;
    const nodes = this.members ? tally(this.members.list()) : undefined;
    const strangers = this.members?.strangers() ?? [];
    // The store's own details (PostgreSQL's `postgres`); whether it serves is part of `ok`.
    const { ok: storeOk, storage: _storage, ...store } = this.store?.health() ?? NOT_WATCHED;
    return {
      ok: natsUp && refused === undefined && storeOk && strangers.length === 0,
      node: this.options.nodeId,
      nats: { connected: natsUp, server: this.attachment.server, ...(refused ? { refused } : {}) },
      ...store,
      ...(nodes ? { nodes } : {}),
      ...(strangers.length > 0 ? { other_clusters: strangers } : {}),
    };
  }

  async stopReceiving(): Promise<void> {
    this.members?.leave();
    await this.attachment.stopReceiving();
  }

  async close(timeoutMs = 5_000): Promise<void> {
    this.members?.leave();
    this.rollCall?.close();
    await this.attachment.close(timeoutMs);
  }
}

/** Connects to the NATS cluster and returns the node (not serving until serve()). */
export async function startClusterNode(options: ClusterOptions, logger: Logger): Promise<ClusterNode> {
  if (options.servers.length === 0)
    throw new Error("cluster mode needs at least one NATS server URL (--nats)");
  const connection = await connectToCluster(options, "broker", logger);
  return new ClusterNode(options, connection, logger);
}
