import type { NatsConnection, Subscription } from "nats";
import type { Logger } from "../logger.js";
import { logRefusedSubscription } from "./refused-subscription.js";
import type { NodeCall } from "./roll-call.js";

/** Where each node of a cluster says, every interval, that it serves and what it does. */
export const PRESENCE_SUBJECT = "_mq9.cluster.presence";

/** How often a node says it is there, unless its options say otherwise. */
export const PRESENCE_INTERVAL_MS = 2_000;
/** Intervals without news after which a node is reported missing… */
const MISSING_AFTER = 3;
/** …and after which it is down: kept in the roster until forgotten, or DOWN_RETENTION_MS. */
const DOWN_AFTER = 30;
/** Intervals after which a node of another cluster, no longer heard, is no longer reported. */
const STRANGER_FORGOTTEN_AFTER = 30;
/** How long a node that is down stays in the roster unless an operator forgets it first. */
export const DOWN_RETENTION_MS = 24 * 60 * 60 * 1000;

/** What forget() did: `forgotten`, or why not. */
export type ForgetOutcome = "forgotten" | "unknown" | "up" | "self";

/**
 * A node's request-serving NATS connection as its nats-server knows it (INFO's server_id and
 * client_id, and the connection's name): what finds it in CONNZ, and what a system user closes.
 */
export interface NatsConnectionRef {
  server_id: string;
  client_id: number;
  name: string;
}

/** What a node tells of itself that its call does not. */
export interface NodeDetails {
  /** The nats-server it is connected to now. */
  natsServer?: string;
  /** Its connection on that server, while connected. */
  natsConnection?: NatsConnectionRef;
  /** The port of its HTTP server (/healthz, /api, the dashboard), when it runs one… */
  httpPort?: number;
  /** …and its URL as other hosts reach it. */
  httpUrl?: string;
  /** The once-per-cluster works it does now (expiry, the orchestrator…). */
  duties: string[];
}

interface NodeNews extends NodeCall {
  started_at: number;
  nats_server?: string;
  nats_connection?: NatsConnectionRef;
  http_port?: number;
  http_url?: string;
  duties: string[];
  leaving?: boolean;
  /** A node id the sender's operator forgot: every node drops it from its roster. */
  forget?: string;
}

/** One node as the roster shows it. */
export interface ClusterMember {
  node: string;
  instance: string;
  /** The node that answers this roster. */
  self: boolean;
  /**
   * `missing`: not heard for three intervals (dead, or cut off from NATS); `down` after thirty,
   * kept until forgotten (`mq9 cluster forget`) or for DOWN_RETENTION_MS.
   */
  state: "up" | "missing" | "down";
  /** Unix milliseconds of its last news, for a node that is missing or down. */
  since?: number;
  /** Unix milliseconds. */
  started_at: number;
  /** Milliseconds since its last news; 0 for this node. */
  last_heard_ms: number;
  nats_server: string | null;
  /** Its request-serving connection on that server, as it last told. */
  nats_connection: NatsConnectionRef | null;
  http_port: number | null;
  http_url: string | null;
  duties: string[];
}

interface Heard {
  news: NodeNews;
  at: number;
  missing: boolean;
  down?: boolean;
}

/**
 * The nodes of this mq9 cluster as this node hears them: each node publishes its news on
 * PRESENCE_SUBJECT every interval and when it leaves. A node that hears a newcomer answers with
 * its own news at once, so a node that starts knows its peers within a round trip. Nodes of
 * another cluster are not listed: they are logged, and kept as strangers for /healthz.
 */
export class ClusterMembers {
  private readonly others = new Map<string, Heard>();
  /** Nodes of other mq9 clusters on this NATS account, by instance. */
  private readonly foreign = new Map<string, Heard>();
  private readonly startedAt = Date.now();
  private subscription?: Subscription;
  private timer?: NodeJS.Timeout;
  private left = false;

  constructor(
    private readonly connection: NatsConnection,
    private readonly self: NodeCall,
    private readonly details: () => NodeDetails,
    private readonly logger: Logger,
    private readonly intervalMs = PRESENCE_INTERVAL_MS,
    private readonly downRetentionMs = DOWN_RETENTION_MS,
  ) {}

  /** Listens to the other nodes and starts telling them of this one. */
  start(): void {
    if (this.subscription || this.left) return;
    this.subscription = this.connection.subscribe(PRESENCE_SUBJECT, {
      callback: (err, msg) => {
        if (err) {
          const consequence = "this node's roster of the cluster (/api/v1/cluster) lists itself only";
          logRefusedSubscription(this.logger, PRESENCE_SUBJECT, err, consequence);
          return;
        }
        const news = parseNews(msg.data);
        if (news) this.heard(news);
      },
    });
    this.announce();
    this.timer = setInterval(() => {
      this.announce();
      this.sweep();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** This node first, then the others by node id. */
  list(now = Date.now()): ClusterMember[] {
    const details = this.details();
    const self: ClusterMember = {
      node: this.self.node,
      instance: this.self.instance,
      self: true,
      state: "up",
      started_at: this.startedAt,
      last_heard_ms: 0,
      nats_server: details.natsServer ?? null,
      nats_connection: details.natsConnection ?? null,
      http_port: details.httpPort ?? null,
      http_url: details.httpUrl ?? null,
      duties: details.duties,
    };
    const others = [...this.others.values()]
      .map(({ news, at }): ClusterMember => {
        const silentMs = now - at;
        const state = this.stateAfter(silentMs);
        return {
          node: news.node,
          instance: news.instance,
          self: false,
          state,
          ...(state === "up" ? {} : { since: at }),
          started_at: news.started_at,
          last_heard_ms: silentMs,
          nats_server: news.nats_server ?? null,
          nats_connection: news.nats_connection ?? null,
          http_port: news.http_port ?? null,
          http_url: news.http_url ?? null,
          duties: news.duties,
        };
      })
      .sort((a, b) => a.node.localeCompare(b.node) || a.instance.localeCompare(b.instance));
    return [self, ...others];
  }

  /**
   * Drops a node that is no longer up (missing or down) from this roster and tells the other
   * nodes to drop it too. A node that is up, or this one, is not forgotten.
   */
  forget(node: string, now = Date.now()): ForgetOutcome {
    if (node === this.self.node) return "self";
    const entries = [...this.others.values()].filter((heard) => heard.news.node === node);
    if (entries.length === 0) return "unknown";
    if (entries.some((heard) => this.stateAfter(now - heard.at) === "up")) return "up";
    this.drop(node);
    this.publish({ forget: node });
    return "forgotten";
  }

  private stateAfter(silentMs: number): ClusterMember["state"] {
    if (silentMs > DOWN_AFTER * this.intervalMs) return "down";
    return silentMs > MISSING_AFTER * this.intervalMs ? "missing" : "up";
  }

  /** Forgets every process of `node` that is not up; returns how many. */
  private drop(node: string, now = Date.now()): number {
    let dropped = 0;
    for (const [instance, heard] of this.others) {
      if (heard.news.node !== node || this.stateAfter(now - heard.at) === "up") continue;
      this.others.delete(instance);
      dropped++;
    }
    if (dropped > 0) this.logger.info(`node ${node} forgotten: dropped from the roster`);
    return dropped;
  }

  /**
   * Tells the other nodes this one is going, so they drop it now rather than report it missing.
   * The news goes out with the connection's drain at the node's close.
   */
  leave(): void {
    if (this.left) return;
    this.left = true;
    clearInterval(this.timer);
    if (!this.subscription) return;
    this.subscription.unsubscribe();
    this.publish({ leaving: true });
  }

  /** Tells the other nodes of this one now (its details changed), not only at the next interval. */
  announce(): void {
    if (!this.left) this.publish({});
  }

  private publish(extra: Partial<NodeNews>): void {
    const details = this.details();
    const news: NodeNews = {
      ...this.self,
      started_at: this.startedAt,
      nats_server: details.natsServer,
      nats_connection: details.natsConnection,
      http_port: details.httpPort,
      http_url: details.httpUrl,
      duties: details.duties,
      ...extra,
    };
    try {
      this.connection.publish(PRESENCE_SUBJECT, JSON.stringify(news));
    } catch {
      // Closed or reconnecting: the next interval tells again.
    }
  }

  /**
   * Nodes of other mq9 clusters heard on this NATS account in the last three intervals: each of
   * them stores and answers every request too, so each SEND lands in two databases.
   */
  strangers(now = Date.now()): { node: string; cluster: string }[] {
    return [...this.foreign.values()]
      .filter((heard) => now - heard.at <= MISSING_AFTER * this.intervalMs && !heard.news.leaving)
      .map(({ news }) => ({ node: news.node, cluster: news.cluster }));
  }

  private heard(news: NodeNews): void {
    if (news.instance === this.self.instance) return;
    if (news.cluster !== this.self.cluster) {
      this.heardStranger(news);
      return;
    }
    if (news.forget !== undefined) this.drop(news.forget);
    const known = this.others.get(news.instance);
    if (news.leaving) {
      if (known && this.others.delete(news.instance)) this.logger.info(`node ${news.node} left the cluster`);
      return;
    }
    this.others.set(news.instance, { news, at: Date.now(), missing: false });
    if (known?.missing) this.logger.info(`node ${news.node} is heard again`);
    if (known) return;
    const replaced = this.dropReplaced();
    const where = news.nats_server ? ` (on nats-server ${news.nats_server})` : "";
    this.logger.info(`node ${news.node} ${replaced ? "restarted" : "joined the cluster"}${where}`);
    // The newcomer learns of this node now instead of at the next interval.
    this.announce();
  }

  /** Two clusters starting together miss each other's roll call, not each other's news. */
  private heardStranger(news: NodeNews): void {
    const first = !this.foreign.has(news.instance);
    this.foreign.set(news.instance, { news, at: Date.now(), missing: false });
    if (!first || news.leaving) return;
    this.logger.error(
      `node ${news.node} of another mq9 cluster (another database or schema) serves on this NATS account: both clusters store and answer every request; give each mq9 cluster a NATS account or cluster of its own (docs/cluster.md)`,
    );
    this.announce();
  }

  /**
   * Drops the former processes of restarted nodes: a process silent for more than an interval
   * and a half whose node id a later-started process announces. Two live processes under one id
   * both keep announcing, so both stay listed. Returns whether any was dropped.
   */
  private dropReplaced(now = Date.now()): boolean {
    const heard = [...this.others.values()];
    const replaced = heard.filter(
      (old) =>
        now - old.at > 1.5 * this.intervalMs &&
        heard.some(
          (other) =>
            other.news.node === old.news.node &&
            other.news.started_at > old.news.started_at &&
            other.at > old.at,
        ),
    );
    for (const old of replaced) this.others.delete(old.news.instance);
    return replaced.length > 0;
  }

  private sweep(now = Date.now()): void {
    this.dropReplaced(now);
    for (const [instance, heard] of this.foreign) {
      if (now - heard.at > STRANGER_FORGOTTEN_AFTER * this.intervalMs) this.foreign.delete(instance);
    }
    for (const [instance, heard] of this.others) {
      const silentS = Math.round((now - heard.at) / 1000);
      const state = this.stateAfter(now - heard.at);
      if (now - heard.at > this.downRetentionMs) {
        this.others.delete(instance);
        this.logger.warn(`node ${heard.news.node} dropped from the roster: down, not heard for ${silentS} s`);
      } else if (state === "down" && !heard.down) {
        heard.missing = true;
        heard.down = true;
        this.logger.warn(
          `node ${heard.news.node} is down: not heard for ${silentS} s; it stays in the roster as down until it comes back under its node id, an operator forgets it (mq9 cluster forget ${heard.news.node}), or ${Math.round(this.downRetentionMs / 3_600_000)} h pass`,
        );
      } else if (!heard.missing && state !== "up") {
        heard.missing = true;
        this.logger.warn(
          `node ${heard.news.node} has not been heard for ${silentS} s: it died or lost its NATS connection; the other nodes take its requests (a hung node's only once its connection closes: docs/cluster.md, Hung nodes), and its leases come back when they expire`,
        );
      }
    }
  }
}

/** How many of `nodes` are up, missing and down. */
export function tally(nodes: readonly ClusterMember[]): { up: number; missing: number; down: number } {
  const count = (state: ClusterMember["state"]) => nodes.filter((n) => n.state === state).length;
  return { up: count("up"), missing: count("missing"), down: count("down") };
}

function parseNews(data: Uint8Array): NodeNews | undefined {
  try {
    const news = JSON.parse(Buffer.from(data).toString("utf8")) as Partial<NodeNews>;
    const strings = [news.node, news.instance, news.cluster].every((v) => typeof v === "string");
    if (!strings || typeof news.started_at !== "number") return undefined;
    // Any client allowed to publish here could send it: keep only fields of the right types.
    return {
      node: news.node as string,
      instance: news.instance as string,
      cluster: news.cluster as string,
      started_at: news.started_at,
      nats_server: typeof news.nats_server === "string" ? news.nats_server : undefined,
      nats_connection: connectionRefOf(news.nats_connection),
      http_port: typeof news.http_port === "number" ? news.http_port : undefined,
      http_url: typeof news.http_url === "string" ? news.http_url : undefined,
      duties: Array.isArray(news.duties) ? news.duties.filter((d) => typeof d === "string") : [],
      leaving: news.leaving === true,
      forget: typeof news.forget === "string" ? news.forget : undefined,
    };
  } catch {
    return undefined;
  }
}

function connectionRefOf(value: unknown): NatsConnectionRef | undefined {
  const ref = value as Partial<NatsConnectionRef> | undefined;
  if (typeof ref !== "object" || ref === null) return undefined;
  if (typeof ref.server_id !== "string" || typeof ref.name !== "string") return undefined;
  if (!Number.isSafeInteger(ref.client_id) || (ref.client_id as number) < 0) return undefined;
  return { server_id: ref.server_id, client_id: ref.client_id as number, name: ref.name };
}
