import { Subjects } from "@mq9/protocol";
import type { FastifyInstance } from "fastify";
import { Gauge } from "prom-client";
import type { ForgetOutcome } from "../../cluster/cluster-members.js";
import type { ClusterView } from "../../cluster/cluster-node.js";
import type { MessagingEngine } from "../../engine/messaging-engine.js";
import type { Logger } from "../../logger.js";
import type { ConnectionStats } from "../../nats/client-connection.js";
import type { Registry } from "../../registry.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { ARD_API_PATH, ardErrorBody, ardRefusals } from "../ard/ard-errors.js";
import { type ArdOptions, mountArdRoutes } from "../ard/ard-routes.js";
import type { BrokerMetrics } from "../broker-metrics.js";
import { mountAgentRoutes } from "./agent-routes.js";
import { ApiError } from "./api-error.js";
import {
  AuthInfo,
  ClusterNodeParams,
  ClusterRoster,
  ConnectionList,
  ConnectionListQuery,
  Forgotten,
  HistoryQuery,
  MetricsHistory,
  MetricsSummary,
  ServerDetail,
} from "./api-schemas.js";
import { mountMailboxRoutes } from "./mailbox-routes.js";
import { MetricsHistory as History, type MetricsHistoryOptions } from "./metrics-history.js";
import { MetricsSampler } from "./metrics-sampler.js";
import { callMq9 } from "./mq9-call.js";
import { openApiDocument } from "./openapi-document.js";
import { bodyParseError, RestRouter } from "./rest-router.js";

export interface RestApiOptions {
  service: Mq9Service;
  engine: MessagingEngine;
  registry?: Registry;
  metrics: BrokerMetrics;
  connections: () => number;
  /** Each client connection's figures; undefined where nats-server holds them (a cluster node). */
  connectionList?: () => ConnectionStats[] | undefined;
  /** The cluster's nodes as this one hears them; undefined on a broker of its own. */
  cluster?: () => ClusterView | undefined;
  /** Forgets a cluster node that is not up; undefined on a broker of its own. */
  forgetClusterNode?: (node: string) => ForgetOutcome | undefined;
  /** The HTTP schemes the broker's credentials travel in; empty when it has none. */
  auth: readonly ("bearer" | "basic")[];
  version: string;
  logger: Logger;
  /** The registry's ARD face (publisher domain, card URLs); see docs/registry.md. */
  ard?: ArdOptions;
  /** The kept history's sizes (tests shorten the interval). */
  history?: Pick<MetricsHistoryOptions, "intervalMs" | "coarseEvery" | "maxMailboxes" | "maxGroups">;
}

/** Paths anyone may read: what the dashboard's login page needs before it has credentials. */
export const REST_OPEN_PATHS = ["/api/v1/auth"];

/**
 * The broker's REST API v1 (mailboxes, messages, agents, metrics, a live stream) and its OpenAPI
 * document at /api/v1/openapi.json. Higher layers add their routes to `router` (the orchestrator's
 * tasks and traces) and they appear in the same document.
 */
export class RestApi {
  readonly router: RestRouter;
  private readonly sampler: MetricsSampler;
  private readonly history: History;
  private readonly started = Date.now();

  constructor(app: FastifyInstance, options: RestApiOptions) {
    this.router = new RestRouter(app);
    this.sampler = new MetricsSampler({
      metrics: options.metrics,
      engine: options.engine,
      connections: options.connections,
      registry: options.registry,
      logger: options.logger,
    });
    this.history = new History({
      metrics: options.metrics,
      engine: options.engine,
      connections: options.connections,
      registry: options.registry,
      logger: options.logger,
      ...options.history,
    });
    this.exportHistory(options.metrics);
    app.setErrorHandler((err: { statusCode?: number; message: string }, request, reply) => {
      // Only the API's own routes answer in its error shape; others keep fastify's.
      if (!request.url.startsWith("/api/v1/")) return reply.send(err);
      const { status, body } = bodyParseError(err);
      if (request.url.startsWith(`${ARD_API_PATH}/`))
        return reply.code(status).send(ardErrorBody(status, body.error));
      return reply.code(status).send(body);
    });
    // A page's script that sent wrong credentials gets a 401 without the challenge that would
    // make the browser open its own login dialog instead of the dashboard's.
    app.addHook("onSend", async (request, reply, payload) => {
      if (reply.statusCode === 401 && request.headers["x-mq9-dashboard"] !== undefined) {
        reply.removeHeader("www-authenticate");
      }
      return payload;
    });
    mountMailboxRoutes(this.router, options.service, options.engine, this.history);
    mountAgentRoutes(this.router, options.service, options.registry);
    ardRefusals(app);
    mountArdRoutes(this.router, options.service, options.registry, options.ard ?? {}, options.logger);
    this.mountSystemRoutes(options);
  }

  /**
   * The history's latest per-mailbox and per-group figures as Prometheus gauges: the mailboxes it
   * keeps (at most its maxMailboxes), so the series stay bounded as its rings do.
   */
  private exportHistory(metrics: BrokerMetrics): void {
    const history = this.history;
    new Gauge({
      name: "mq9_mailbox_messages",
      help: "live messages of a mailbox (the mailboxes the dashboard keeps a history of), at the last 5 s sample",
      labelNames: ["mailbox"],
      registers: [metrics.registry],
      collect() {
        this.reset();
        for (const m of history.current().mailboxes) this.set({ mailbox: m.mailbox }, m.messages);
      },
    });
    new Gauge({
      name: "mq9_group_lag",
      help: "messages a consumer group has not ACKed (pending + leased), at the last 5 s sample",
      labelNames: ["mailbox", "group"],
      registers: [metrics.registry],
      collect() {
        this.reset();
        for (const g of history.current().groups) this.set({ mailbox: g.mailbox, group: g.group }, g.lag);
      },
    });
    new Gauge({
      name: "mq9_group_lag_seconds",
      help: "age of the oldest message a consumer group has not ACKed, at the last 5 s sample",
      labelNames: ["mailbox", "group"],
      registers: [metrics.registry],
      collect() {
        this.reset();
        for (const g of history.current().groups)
          this.set({ mailbox: g.mailbox, group: g.group }, g.lagSeconds);
      },
    });
  }

  close(): void {
    this.sampler.close();
    this.history.close();
  }

  private mountSystemRoutes(options: RestApiOptions): void {
    const router = this.router;
    router.add({
      method: "GET",
      path: "/api/v1/openapi.json",
      tag: "System",
      summary: "This API's OpenAPI 3.1 document",
      responses: { 200: { description: "the document", mediaType: "application/json" } },
      errors: [],
      handler: async () => ({
        status: 200,
        body: openApiDocument(router, { version: options.version, auth: options.auth.length > 0 }),
      }),
    });

    router.add({
      method: "GET",
      path: "/api/v1/auth",
      tag: "System",
      summary: "Whether the broker wants credentials, and which (open to all: the login page asks it)",
      responses: { 200: { description: "the scheme", schema: AuthInfo } },
      open: true,
      errors: [],
      handler: async () => ({
        status: 200,
        body: { required: options.auth.length > 0, schemes: options.auth },
      }),
    });

    router.add({
      method: "GET",
      path: "/api/v1/cluster",
      tag: "System",
      summary:
        "The cluster's nodes as this node hears them: state, NATS server, HTTP port, once-per-cluster duties",
      responses: {
        200: { description: "the roster; `clustered: false` on a broker of its own", schema: ClusterRoster },
      },
      errors: [],
      handler: async () => {
        const view = options.cluster?.();
        return { status: 200, body: view ? { clustered: true, ...view } : { clustered: false, nodes: [] } };
      },
    });

    router.add({
      method: "DELETE",
      path: "/api/v1/cluster/nodes/:node",
      tag: "System",
      summary:
        "Forget a node that is down or missing: every node drops it from its roster (one that is up stays)",
      params: ClusterNodeParams,
      responses: { 200: { description: "forgotten by every node that hears this one", schema: Forgotten } },
      errors: [404, 409],
      handler: async ({ params }) => {
        const outcome = options.forgetClusterNode?.(params.node);
        if (outcome === undefined) {
          throw new ApiError(
            404,
            "NOT_CLUSTERED",
            "this broker runs on its own (mq9 serve without --cluster): it has no cluster nodes to forget",
          );
        }
        if (outcome === "unknown") {
          throw new ApiError(
            404,
            "NODE_NOT_FOUND",
            `no node ${params.node} in this node's roster: mq9 cluster status lists the nodes it hears`,
          );
        }
        if (outcome === "self" || outcome === "up") {
          throw new ApiError(
            409,
            "NODE_UP",
            `node ${params.node} is up${outcome === "self" ? " (it is the node you asked)" : ""}: only a node that is down or missing can be forgotten; stop it first, or wait until it is reported missing`,
          );
        }
        return { status: 200, body: { forgotten: params.node } };
      },
    });

    router.add({
      method: "GET",
      path: "/api/v1/server",
      tag: "System",
      summary:
        "The broker: version, uptime, store, connections, subscriptions, memory, disk, cluster (SERVER.INFO)",
      responses: { 200: { description: "the broker now", schema: ServerDetail } },
      errors: [],
      handler: async ({ principal }) => ({
        status: 200,
        body: await callMq9(options.service, Subjects.serverInfo, {}, { principal }),
      }),
    });

    router.add({
      method: "GET",
      path: "/api/v1/connections",
      tag: "System",
      summary:
        "Each client connection: name, address, user, since, subscriptions, messages and bytes in and out, pending (like nats-server's /connz)",
      query: ConnectionListQuery,
      responses: { 200: { description: "the connections, sorted", schema: ConnectionList } },
      errors: [400],
      handler: async ({ query, principal }) => {
        // Who is connected is the broker's business: asked as SERVER.INFO is, by whom may ask it.
        await callMq9(options.service, Subjects.serverInfo, {}, { principal });
        const all = options.connectionList?.();
        if (all === undefined) {
          return {
            status: 200,
            body: {
              total: 0,
              connections: [],
              note: "a cluster node's clients connect to nats-server: its /connz lists them",
            },
          };
        }
        const sort = query.sort ?? "since";
        const key: Record<typeof sort, (c: ConnectionStats) => number> = {
          since: (c) => c.connectedAt,
          msgs_in: (c) => -c.inMsgs,
          msgs_out: (c) => -c.outMsgs,
          bytes_in: (c) => -c.inBytes,
          bytes_out: (c) => -c.outBytes,
          pending: (c) => -c.pendingBytes,
          subscriptions: (c) => -c.subscriptions,
        };
        const sorted = [...all].sort((a, b) => key[sort](a) - key[sort](b) || a.id - b.id);
        const now = Date.now();
        return {
          status: 200,
          body: {
            total: all.length,
            connections: sorted.slice(0, query.limit ?? 500).map((c) => ({
              id: c.id,
              name: c.name,
              address: c.port === null ? c.ip : `${c.ip}:${c.port}`,
              user: c.user,
              connected_at: c.connectedAt,
              uptime_s: Math.floor((now - c.connectedAt) / 1000),
              subscriptions: c.subscriptions,
              msgs_in: c.inMsgs,
              bytes_in: c.inBytes,
              msgs_out: c.outMsgs,
              bytes_out: c.outBytes,
              pending_bytes: c.pendingBytes,
            })),
          },
        };
      },
    });

    router.add({
      method: "GET",
      path: "/api/v1/metrics/summary",
      tag: "Metrics",
      summary: "Connections, request rates, stored messages and bytes, mailboxes, agents",
      responses: { 200: { description: "the figures now", schema: MetricsSummary } },
      errors: [],
      handler: async () => ({
        status: 200,
        body: {
          now: await this.sampler.now(),
          requests: Object.fromEntries(options.metrics.requestCounts()),
          registry: options.registry !== undefined,
          uptime_s: (Date.now() - this.started) / 1000,
        },
      }),
    });

    router.add({
      method: "GET",
      path: "/api/v1/metrics/history",
      tag: "Metrics",
      summary:
        "The broker's figures over a range (an hour in 5 s samples, a day in 1 min ones), kept whether or not anyone looks",
      query: HistoryQuery,
      responses: { 200: { description: "oldest first", schema: MetricsHistory } },
      errors: [400],
      handler: async ({ query }) => {
        const { interval_s, samples } = this.history.samples(query.range ?? 900);
        return { status: 200, body: { interval_s, samples } };
      },
    });

    router.add({
      method: "GET",
      path: "/api/v1/stream",
      tag: "Metrics",
      summary: "Server-sent events: a `sample` event (a MetricsSample) every 2 s; pages refresh on it",
      responses: { 200: { description: "an event stream", mediaType: "text/event-stream" } },
      errors: [],
      handler: async (_input, request, reply) => {
        reply.hijack();
        const out = reply.raw;
        out.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
          connection: "keep-alive",
        });
        out.write("retry: 2000\n\n");
        const send = (sample: unknown) => out.write(`event: sample\ndata: ${JSON.stringify(sample)}\n\n`);
        const stop = this.sampler.subscribe(send);
        void this.sampler.now().then(send, () => {});
        request.raw.on("close", stop);
        return undefined;
      },
    });
  }
}
