import Fastify, { type FastifyInstance } from "fastify";
import type { Logger } from "../logger.js";
import type { BrokerMetrics } from "./broker-metrics.js";

export interface HttpServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  metrics: BrokerMetrics;
  /** Reports whether the broker can serve; /healthz answers 503 otherwise. */
  health: () => { ok: boolean; [detail: string]: unknown };
  /** Adds the routes of higher layers (A2A gateway, MCP, orchestrator API, dashboard). */
  routes?: (app: FastifyInstance) => void | Promise<void>;
  logger: Logger;
}

/** The broker's one HTTP server: /healthz, /metrics, and whatever `routes` mounts. */
export class HttpServer {
  private constructor(
    readonly app: FastifyInstance,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(options: HttpServerOptions): Promise<HttpServer> {
    const app = Fastify({ logger: false });
    app.get("/healthz", async (_request, reply) => {
      const health = options.health();
      return reply.code(health.ok ? 200 : 503).send({ status: health.ok ? "ok" : "unavailable", ...health });
    });
    app.get("/metrics", async (_request, reply) => {
      reply.header("content-type", options.metrics.registry.contentType);
      return options.metrics.registry.metrics();
    });
    await options.routes?.(app);
    await app.listen({ host: options.host, port: options.port });
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : options.port;
    options.logger.debug({ host: options.host, port }, "http server listening");
    return new HttpServer(app, options.host, port);
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}
