import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { Principal } from "../../auth/principal.js";
import { principalOf } from "../http-server.js";
import { ApiError } from "./api-error.js";

export type HttpMethod = "GET" | "POST" | "DELETE";

/** What a handler gets: the validated parts of the request. */
export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Aborted when the client goes away (a FETCH then stops waiting). */
  signal: AbortSignal;
  /** The user the request authenticated as (with users configured): mq9 calls run as that user. */
  principal?: Principal;
}

/** A handler's answer: a status and a JSON body, or nothing when it wrote the reply itself (a stream). */
export type RouteOutput = { status: number; body: unknown } | undefined;

export interface RouteSpec<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  method: HttpMethod;
  /** Fastify's form, e.g. `/api/v1/mailboxes/:address`. */
  path: string;
  /** Groups operations in the OpenAPI document (Mailboxes, Messages, Agents, ...). */
  tag: string;
  summary: string;
  description?: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Documented answers: status → description and body schema (a stream documents its media type). */
  responses: Record<number, { description: string; schema?: z.ZodType; mediaType?: string }>;
  /** Served without credentials (the login page's question). */
  open?: boolean;
  /** Error statuses this route may answer, each with the Error body. */
  errors: number[];
  /** Another API's error envelope (ARD's) in place of `{error, code}`. */
  errorFormat?: ErrorFormat;
  handler(
    input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<RouteOutput>;
}

/** An error envelope of another standard served through the router: its schema and its body. */
export interface ErrorFormat {
  schema: z.ZodType;
  body(failure: ApiError): unknown;
}

// biome-ignore lint/suspicious/noExplicitAny: the router keeps routes of every shape in one list.
type AnyRoute = RouteSpec<any, any, any>;

function invalid(where: string, error: z.ZodError): ApiError {
  const issue = error.issues[0];
  const path = [where, ...issue.path.map(String)].join(".");
  return new ApiError(400, "INVALID_REQUEST", `invalid request: ${path}: ${issue.message}`);
}

function parse<T extends z.ZodType>(schema: T | undefined, value: unknown, where: string): z.output<T> {
  if (!schema) return undefined as z.output<T>;
  // An absent body is undefined; a JSON `null` is a body, and no route takes one (a purge with
  // `null` must not read as "no filter").
  const parsed = schema.safeParse(where === "body" ? value : (value ?? {}));
  if (!parsed.success) throw invalid(where, parsed.error);
  return parsed.data;
}

/**
 * The REST API's routes: each validated by its zod schemas and answered as JSON, errors as
 * `{error, code}`; the same list makes the OpenAPI document (openapi-document.ts).
 */
export class RestRouter {
  readonly routes: AnyRoute[] = [];
  /** Each path's pattern and the methods it has. */
  private readonly paths = new Map<string, { pattern: RegExp; params: number; methods: Set<string> }>();

  constructor(private readonly app: FastifyInstance) {
    // A path of the API asked with a method it does not have gets 405 and the methods it has
    // (RFC 9110), not the 404 of a path that does not exist. Before the body is read: a method
    // fastify reads a body for would fail there first.
    app.addHook("onRequest", async (request, reply) => {
      if (!request.is404) return;
      const path = request.url.split("?")[0];
      const allowed = this.methodsAt(path);
      if (allowed.length === 0) return;
      return reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send({
          error: `method ${request.method} is not allowed on ${path}: it answers ${allowed.join(", ")} (see /api/v1/openapi.json)`,
          code: "METHOD_NOT_ALLOWED",
        });
    });
  }

  /**
   * The methods of the route path `path` is read as (HEAD with GET, as fastify serves it), or
   * none. A static segment wins over a parameter, as in fastify's router.
   */
  private methodsAt(path: string): string[] {
    const matches = [...this.paths.values()].filter(({ pattern }) => pattern.test(path));
    const fewest = Math.min(...matches.map(({ params }) => params));
    const methods = new Set<string>();
    for (const { params, methods: own } of matches) {
      if (params === fewest) for (const method of own) methods.add(method);
    }
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  }

  add<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(spec: RouteSpec<P, Q, B>): void {
    this.routes.push(spec);
    let known = this.paths.get(spec.path);
    if (!known) {
      const parts = spec.path.split("/");
      const pattern = parts
        .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("/");
      const params = parts.filter((part) => part.startsWith(":")).length;
      known = { pattern: new RegExp(`^${pattern}$`), params, methods: new Set() };
      this.paths.set(spec.path, known);
    }
    known.methods.add(spec.method);
    this.app.route({
      method: spec.method,
      url: spec.path,
      handler: async (request, reply) => {
        const aborted = new AbortController();
        reply.raw.on("close", () => aborted.abort());
        try {
          const input = {
            params: parse(spec.params, request.params, "params"),
            query: parse(spec.query, request.query, "query"),
            body: parse(spec.body, request.body, "body"),
            signal: aborted.signal,
            principal: principalOf(request),
          };
          const output = await spec.handler(input, request, reply);
          if (output === undefined) return reply;
          return reply.code(output.status).send(output.body);
        } catch (err) {
          const failure = ApiError.from(err);
          if (failure.status >= 500) request.log.error({ err }, "REST request failed");
          const body = spec.errorFormat?.body(failure) ?? { error: failure.message, code: failure.code };
          return reply.code(failure.status).send(body);
        }
      },
    });
  }
}

/** The answer to a body fastify could not parse, in the API's own error shape. */
export function bodyParseError(err: { statusCode?: number; message: string }): {
  status: number;
  body: { error: string; code: string };
} {
  const status = err.statusCode && err.statusCode < 500 ? err.statusCode : 400;
  return {
    status,
    body: {
      error: `invalid request: the body is not JSON (${err.message}); send a JSON object with content-type application/json`,
      code: "INVALID_REQUEST",
    },
  };
}
