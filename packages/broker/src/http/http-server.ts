import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import type { AuthGuard, ConnectCredentials } from "../auth/index.js";
import type { Principal } from "../auth/principal.js";
import type { Logger } from "../logger.js";
import type { BrokerMetrics } from "./broker-metrics.js";
import { HostGuard } from "./host-guard.js";

export interface HttpServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  metrics: BrokerMetrics;
  /** Reports whether the broker can serve; /healthz answers 503 otherwise. */
  health: () => { ok: boolean; [detail: string]: unknown };
  /** Adds the routes of higher layers (A2A gateway, MCP, orchestrator API, dashboard). */
  routes?: (app: FastifyInstance) => void | Promise<void>;
  /**
   * Checks the broker's users: when set, every route but /healthz and /metrics requires the
   * credentials of one of them (a token as Bearer, user and password as Basic), throttled as on the
   * NATS port (the broker shares one guard between both). With several users configured, only
   * admins are let in, since the HTTP apps act on the broker with rights of their own.
   */
  auth?: AuthGuard;
  /** Paths served without credentials (the dashboard's page and scripts, which hold no data). */
  openPath?: (path: string) => boolean;
  /** DNS-rebinding protection; see HostGuardOptions. */
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  logger: Logger;
}

const OPEN_PATHS = new Set(["/healthz", "/metrics"]);

/** The longest path parameter the router reads (fastify's maxParamLength); a longer one gets 414. */
export const MAX_PARAM_LENGTH = 4096;

/** Who made each authenticated HTTP request: the REST API calls the engine as that user. */
const requestUsers = new WeakMap<object, Principal>();

/** The user an HTTP request authenticated as; undefined when the broker has no users. */
export function principalOf(request: object): Principal | undefined {
  return requestUsers.get(request);
}

/** The credentials an Authorization header carries: undefined when it carries none. */
function credentialsOf(header: string | undefined): ConnectCredentials | undefined {
  if (!header) return undefined;
  const [scheme, value = ""] = header.split(" ", 2);
  if (scheme.toLowerCase() === "bearer") return { auth_token: value };
  if (scheme.toLowerCase() !== "basic") return undefined;
  const decoded = Buffer.from(value, "base64").toString();
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), pass: decoded.slice(colon + 1) };
}

/** The broker's one HTTP server: /healthz, /metrics, and whatever `routes` mounts. */
export class HttpServer {
  private constructor(
    readonly app: FastifyInstance,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(options: HttpServerOptions): Promise<HttpServer> {
    // Fastify's default limit for a path parameter is 100 characters; the REST API's parameters run
    // longer (an agent's mailbox to 1024), and one just past their limit gets the API's own 400.
    const app = Fastify({
      logger: false,
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      // A `__proto__` or `constructor.prototype` key in a JSON body is dropped, not refused: it is
      // valid JSON (an agent's free-form payload may hold one), and dropping it keeps it harmless.
      onProtoPoisoning: "remove",
      onConstructorPoisoning: "remove",
      // A URL the router cannot take (a parameter too long, bad percent-encoding): the REST API
      // answers in its own error shape, as its OpenAPI document says; other routes as fastify does.
      frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
        const status = error.statusCode ?? 400;
        if (!request.url.startsWith("/api/v1/")) return reply.code(status).send(error);
        const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
        return reply.code(status).send({
          error: tooLong
            ? `the URL is too long: a path parameter may have at most ${MAX_PARAM_LENGTH} characters`
            : `invalid request: the URL cannot be read (${error.message})`,
          code: tooLong ? "URI_TOO_LONG" : "INVALID_REQUEST",
        });
      },
    });
    const guard = new HostGuard({
      boundHost: options.host,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
    });
    if (guard.enabled) {
      app.addHook("onRequest", async (request, reply) => {
        if (OPEN_PATHS.has(request.url.split("?")[0])) return;
        const refusal = guard.refusal(request.headers.host, request.headers.origin);
        if (refusal === undefined) return;
        options.logger.warn(
          { host: request.headers.host, origin: request.headers.origin, url: request.url },
          "http: refused a request from a host or origin outside the allow list",
        );
        return reply.code(403).send({ error: refusal });
      });
    }
    const auth = options.auth;
    if (auth !== undefined) {
      const users = auth.users;
      // Without this, the HTTP port would be a way around the broker's own authentication.
      app.addHook("onRequest", async (request, reply) => {
        const path = request.url.split("?")[0];
        if (OPEN_PATHS.has(path) || options.openPath?.(path)) return;
        const creds = credentialsOf(request.headers.authorization);
        const ip = request.ip.replace(/^::ffff:/, "");
        const outcome = await auth.check("http", ip, creds ?? {}, undefined);
        if (outcome.refusal === "throttled") {
          const seconds = Math.max(1, Math.ceil((outcome.retryAfterMs ?? 1000) / 1000));
          return reply
            .code(429)
            .header("retry-after", String(seconds))
            .send({
              error: `too many failed authentications from this address: try again in ${seconds} s with the right token (Bearer) or user and password (Basic)`,
            });
        }
        const user = outcome.user;
        if (user !== undefined && (!users.multiUser || user.principal.admin)) {
          requestUsers.set(request, user.principal);
          return;
        }
        if (user !== undefined) {
          return reply.code(403).send({
            error: `forbidden: user '${user.principal.name}' is not an admin; the HTTP routes (MCP, A2A, API) act with the broker's own rights, so only admin users may use them`,
          });
        }
        return reply.code(401).header("www-authenticate", users.httpChallenge).send({
          error: "authentication required: send a user's token (Bearer) or user and password (Basic)",
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
