import { timingSafeEqual } from "node:crypto";
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
  /** The broker's credentials: when set, every route but /healthz, /metrics and `openPath` ones requires them. */
  auth?: { token?: string; user?: string; password?: string };
  /** Paths served without credentials (the dashboard's page and scripts, which hold no data). */
  openPath?: (path: string) => boolean;
  logger: Logger;
}

const OPEN_PATHS = new Set(["/healthz", "/metrics"]);

function same(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** True when the Authorization header carries the broker's token (Bearer) or user and password (Basic). */
function authorized(header: string | undefined, auth: NonNullable<HttpServerOptions["auth"]>): boolean {
  if (!header) return false;
  const [scheme, value = ""] = header.split(" ", 2);
  if (auth.token !== undefined) return scheme.toLowerCase() === "bearer" && same(value, auth.token);
  if (auth.user === undefined || scheme.toLowerCase() !== "basic") return false;
  return same(Buffer.from(value, "base64").toString(), `${auth.user}:${auth.password ?? ""}`);
}

/** The broker's one HTTP server: /healthz, /metrics, and whatever `routes` mounts. */
export class HttpServer {
  private constructor(
    readonly app: FastifyInstance,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(options: HttpServerOptions): Promise<HttpServer> {
    // Mail addresses run to 128 characters (fastify's default limit for a path parameter is 100).
    const app = Fastify({ logger: false, routerOptions: { maxParamLength: 512 } });
    const auth = options.auth;
    if (auth && (auth.token !== undefined || auth.user !== undefined)) {
      // Without this, the HTTP port would be a way around the broker's own authentication.
      const challenge = auth.token !== undefined ? 'Bearer realm="mq9"' : 'Basic realm="mq9"';
      app.addHook("onRequest", async (request, reply) => {
        const path = request.url.split("?")[0];
        if (
          OPEN_PATHS.has(path) ||
          options.openPath?.(path) ||
          authorized(request.headers.authorization, auth)
        )
          return;
        return reply.code(401).header("www-authenticate", challenge).send({
          error: "authentication required: send the broker's token (Bearer) or user and password (Basic)",
        });
      });
    }
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
