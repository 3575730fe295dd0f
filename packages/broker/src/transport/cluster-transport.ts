import { AccountIdentity } from "../cluster/account-identity.js";
import type { ForgetOutcome } from "../cluster/cluster-members.js";
import { type ClusterNode, type ClusterView, startClusterNode } from "../cluster/cluster-node.js";
import type { ClusterOptions } from "../cluster/cluster-options.js";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";
import type { BrokerAddress, BrokerTransport, TransportHealth } from "./broker-transport.js";
import type { Mq9RequestHandler } from "./mq9-request.js";
import { QueueGroupRequests } from "./queue-group-requests.js";

/**
 * One node of a cluster: requests come from a queue group of an existing NATS cluster
 * (QueueGroupRequests), over the connection of the node (cluster/cluster-node.ts: roll call,
 * presence, notifier); clients connect to the cluster's nats-servers.
 */
export class ClusterTransport implements BrokerTransport {
  private readonly requests: QueueGroupRequests;
  private readonly identity: AccountIdentity;
  private readonly queueGroup: string;

  private constructor(
    readonly node: ClusterNode,
    private readonly options: ClusterOptions,
    private readonly logger: Logger,
    readonly defaultHttpHost: string,
  ) {
    this.queueGroup = options.queueGroup ?? "mq9";
    this.identity = new AccountIdentity(options.identity);
    this.requests = new QueueGroupRequests(node.connection, this.queueGroup, logger, this.identity);
  }

  /** Whether the nodes learn who asked (an identity), so the service enforces ownership. */
  get isolatesClients(): boolean {
    return this.identity.isolates;
  }

  /**
   * Connects to the NATS cluster and joins the roll call under the name of the cluster whose
   * state the shared store holds; not serving until serve().
   */
  static async connect(
    options: ClusterOptions,
    logger: Logger,
    httpHost: string,
    store: Store,
  ): Promise<ClusterTransport> {
    const node = await startClusterNode(options, logger);
    try {
      const shared = store.sharedDatabase();
      if (shared) await node.join(await shared.clusterId(), shared.duties, (i) => shared.endSessionsOf(i));
    } catch (err) {
      await node.close();
      throw err;
    }
    return new ClusterTransport(node, options, logger, httpHost);
  }

  get notifier(): ClusterNode["notifier"] {
    return this.node.notifier;
  }

  get registryScope(): { node: string; cluster: true } {
    return { node: this.node.instance, cluster: true };
  }

  /** A node has no listener of its own: its clients are the cluster's. */
  connectionCount(): number {
    return 0;
  }

  connections(): undefined {
    return undefined;
  }

  /** The clients' subscriptions are nats-server's. */
  subscriptionCount(): undefined {
    return undefined;
  }

  watch(metrics: BrokerMetrics, store: Store): void {
    this.node.watch(metrics, store);
    store.watch({
      metrics: metrics.registry,
      logger: this.logger,
      cluster: true,
      // A node whose schema a newer mq9 migrated leaves the queue group: the new nodes take its requests.
      onRefused: (why) => {
        this.logger.error(`cluster node ${this.options.nodeId} stops taking requests: ${why}`);
        void this.requests.stopReceiving();
      },
    });
  }

  health(): TransportHealth {
    return this.node.health(this.requests.refused);
  }

  async serve(handler: Mq9RequestHandler): Promise<BrokerAddress> {
    this.requests.serve(handler);
    this.node.start();
    const { nodeId, servers } = this.options;
    const subjects = this.identity.subjects().map((s) => s.subject);
    this.logger.info(
      { node: nodeId, servers, identity: this.options.identity?.kind ?? "none" },
      `cluster node ${nodeId} serving ${subjects.join(" and ")} in queue group ${this.queueGroup}`,
    );
    if (this.identity.isolates) {
      this.logger.info(
        `cluster node ${nodeId}: the requester is the account prefix of each request (<account>.$mq9.AI.…); requests on $mq9.AI.> itself come from the nodes' own NATS account and act as the admin mq9-internal, so only mq9 nodes may have users in that account`,
      );
    }
    const first = new URL(servers[0].includes("://") ? servers[0] : `nats://${servers[0]}`);
    return { host: first.hostname, port: Number(first.port || 4222) };
  }

  /** A node's HTTP address goes into its presence news, for the other nodes' rosters. */
  advertiseHttp(port: number, host: string): void {
    this.node.advertiseHttp(port, host);
  }

  clusterView(): ClusterView | undefined {
    return this.node.view();
  }

  forgetClusterNode(node: string): ForgetOutcome {
    return this.node.forget(node);
  }

  stopReceiving(): Promise<void> {
    this.node.leave();
    return this.requests.stopReceiving();
  }

  /** Answers the requests in hand (up to `drainTimeoutMs`), then leaves and disconnects. */
  async close(drainTimeoutMs?: number): Promise<void> {
    this.node.leave();
    await this.requests.close(drainTimeoutMs);
    await this.node.close();
  }
}
