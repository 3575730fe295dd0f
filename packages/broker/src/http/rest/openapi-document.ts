import { z } from "zod";
import { MAX_PARAM_LENGTH } from "../http-server.js";
import { documentedAs, ErrorBody } from "./api-schemas.js";
import type { RestRouter } from "./rest-router.js";

type JsonSchema = Record<string, unknown>;

const ERROR_TEXTS: Record<number, string> = {
  400: "bad input: the error says which field and why; nothing changed",
  401: "authentication required (the broker's token as Bearer, or user and password as Basic)",
  403: "refused: a user that is not an admin, or a Host or Origin outside the allow list",
  404: "not found: the error says what is not there",
  409: "it exists already",
  414: `a path parameter is longer than the ${MAX_PARAM_LENGTH} characters the broker reads`,
  501: "this broker's store cannot do it (a store without the inspection operations)",
  502: "a part of the broker did not get an answer it needed (the error says which)",
  503: "that part of the broker is off or not started (the error says which)",
};

/**
 * A copy of `value` with each `{"$ref": "#/$defs/X"}` replaced by the definition it names: the
 * document's parts are cut out of their converted schemas, where no `$defs` would follow them.
 */
function inlineDefs(value: unknown, defs: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((item) => inlineDefs(item, defs));
  if (value === null || typeof value !== "object") return value;
  const { $ref, ...rest } = value as JsonSchema;
  const named = typeof $ref === "string" && $ref.startsWith("#/$defs/") ? $ref.slice(8) : undefined;
  const own = Object.fromEntries(Object.entries(rest).map(([key, item]) => [key, inlineDefs(item, defs)]));
  if (named === undefined) return $ref === undefined ? own : { $ref, ...own };
  if (!(named in defs)) throw new Error(`OpenAPI document: no definition of ${named}`);
  return { ...(inlineDefs(defs[named], defs) as JsonSchema), ...own };
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const converted = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    reused: "inline",
    override: (ctx) => {
      const json = ctx.jsonSchema as JsonSchema;
      // Ids name the shapes in the code; left in, they would be read as JSON Schema's `$id`-like keyword.
      delete json.id;
      const shown = documentedAs.get(ctx.zodSchema);
      if (shown === undefined) return;
      for (const key of Object.keys(json)) if (key !== "description") delete json[key];
      Object.assign(json, shown);
    },
  }) as JsonSchema;
  const { $schema: _schema, $defs = {}, ...rest } = converted;
  return inlineDefs(rest, $defs as Record<string, unknown>) as JsonSchema;
}

/** Path and query parameters of an object schema, one OpenAPI parameter per property. */
function parameters(schema: z.ZodType | undefined, where: "path" | "query"): JsonSchema[] {
  if (!schema) return [];
  const object = jsonSchema(schema, "input") as {
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  return Object.entries(object.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === "path" || (object.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/** Fastify's `/a/:b` as OpenAPI's `/a/{b}`. */
function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, "{$1}");
}

/** The OpenAPI 3.1 document of every route the router holds, from the schemas that validate them. */
export function openApiDocument(router: RestRouter, info: { version: string; auth: boolean }): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorSchema = jsonSchema(ErrorBody, "output");
  const unauthorizedSchema = jsonSchema(ErrorBody.partial({ code: true }), "output");
  for (const route of router.routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, answer] of Object.entries(route.responses)) {
      const mediaType = answer.mediaType ?? "application/json";
      responses[status] = {
        description: answer.description,
        ...(answer.schema || answer.mediaType
          ? { content: { [mediaType]: { schema: answer.schema ? jsonSchema(answer.schema, "output") : {} } } }
          : {}),
      };
    }
    // Every validated part can be refused; a path parameter past the router's limit gets 414.
    const errors = [...route.errors];
    if (route.params || route.query || route.body) errors.push(400);
    if (route.path.includes(":")) errors.push(414);
    for (const status of [...new Set(errors)].sort()) {
      responses[String(status)] = {
        description: ERROR_TEXTS[status] ?? "error",
        content: {
          "application/json": {
            schema: route.errorFormat ? jsonSchema(route.errorFormat.schema, "output") : errorSchema,
          },
        },
      };
    }
    if (info.auth && !route.open) {
      for (const status of [401, 403]) {
        responses[String(status)] = {
          description: ERROR_TEXTS[status],
          content: {
            "application/json": {
              schema: route.errorFormat ? jsonSchema(route.errorFormat.schema, "output") : unauthorizedSchema,
            },
          },
        };
      }
    }
    const operation: Record<string, unknown> = {
      operationId: `${route.method.toLowerCase()}${openApiPath(route.path)
        .replace(/^\/api\/v1/, "")
        .replace(/[{}]/g, "")
        .split(/[/-]/)
        .filter(Boolean)
        .map((part) => part[0].toUpperCase() + part.slice(1))
        .join("")}`,
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      parameters: [...parameters(route.params, "path"), ...parameters(route.query, "query")],
      ...(route.body
        ? {
            requestBody: {
              required: !route.body.safeParse(undefined).success,
              content: { "application/json": { schema: jsonSchema(route.body, "input") } },
            },
          }
        : {}),
      responses,
    };
    paths[openApiPath(route.path)] ??= {};
    paths[openApiPath(route.path)][route.method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "mq9 REST API",
      version: info.version,
      description:
        "Mailboxes, messages and agents of an mq9 broker over HTTP: the same operations, semantics and error texts as the mq9 protocol over NATS.",
    },
    servers: [{ url: "/" }],
    ...(info.auth
      ? {
          components: {
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer" },
              basic: { type: "http", scheme: "basic" },
            },
          },
          security: [{ bearer: [] }, { basic: [] }],
        }
      : {}),
    paths,
  };
}
