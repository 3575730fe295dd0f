import { randomBytes } from "node:crypto";
import type { ReplyPayload } from "@mq9/protocol";
import type { NatsConnection } from "nats";
import { Gauge } from "prom-client";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { Mq9Service } from "../service/mq9-service.js";
import type { Store } from "../store/store.js";
import type { ClusterOptions } from "./cluster-options.js";
import { connectToCluster, NatsAttachment } from "./nats-attachment.js";
import { NatsNotifier } from "./nats-notifier.js";

/** A store that can say whether its database answers (PostgresStore can). */
interface PingableStore extends Store {
  ping?(): Promise<boolean>;
}

const HEALTH_PROBE_MS = 2_000;

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
  private databaseUp = true;
  private probe?: NodeJS.Timeout;

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

  /** Hands every request of the queue group to the service, its reply back through NATS. */
  serve(service: Mq9Service): void {
    this.attachment.serve((request) => {
      service.answer(
        {
          subject: request.subject,
          header: request.header,
          payload: request.payload,
          undelivered: request.undelivered,
        },
        (reply) => request.reply(replyBytes(reply)),
      );
    });
  }

  /** Gauges of the node's links, and a periodic probe of the database for /healthz. */
  watch(metrics: BrokerMetrics, store: PingableStore): void {
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
      name: "mq9_cluster_database_up",
      help: "1 while the shared database answered this node's last probe",
      registers: [metrics.registry],
      collect() {
        this.set(node.databaseUp ? 1 : 0);
      },
    });
    const ping = store.ping?.bind(store);
    if (!ping) return;
    const check = () => {
      void ping().then((up) => {
        if (up !== this.databaseUp) {
          if (up) this.logger.info("postgres: the database answers again");
          else this.logger.error("postgres: the database does not answer; requests fail until it is back");
        }
        this.databaseUp = up;
      });
    };
    check();
    this.probe = setInterval(check, HEALTH_PROBE_MS);
    this.probe.unref();
  }

  health(): { ok: boolean; [detail: string]: unknown } {
    const natsUp = this.attachment.connected;
    const refused = this.attachment.refused;
    return {
      ok: natsUp && refused === undefined && this.databaseUp,
      node: this.options.nodeId,
      nats: { connected: natsUp, server: this.attachment.server, ...(refused ? { refused } : {}) },
      postgres: { up: this.databaseUp },
    };
  }

  stopReceiving(): Promise<void> {
    return this.attachment.stopReceiving();
  }

  async close(timeoutMs = 5_000): Promise<void> {
    clearInterval(this.probe);
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
