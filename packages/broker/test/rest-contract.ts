import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "vitest";

/** One call of a REST route, checked against what the OpenAPI document says of its answer. */
export interface RestCase {
  /** The operation as the document names it: method and templated path. */
  method: "GET" | "POST" | "DELETE";
  path: string;
  /** The URL actually called (path with values, query). */
  url: string;
  body?: unknown;
  /** A raw body (bad JSON) sent instead of `body`. */
  rawBody?: string;
  status: number;
  /** The error text the answer must carry, for error statuses. */
  error?: string | RegExp;
  headers?: Record<string, string>;
}

type Operation = {
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
  requestBody?: unknown;
};

/** The document's operations and a validator of each documented answer's body. */
export class RestContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly covered = new Map<string, Set<number>>();

  readonly document: { paths: Record<string, Record<string, Operation>> };

  constructor(
    /** The served OpenAPI document, as parsed JSON. */
    document: unknown,
    private readonly base: string,
    private readonly headers: Record<string, string> = {},
  ) {
    this.document = document as RestContract["document"];
  }

  operations(): { key: string; operation: Operation }[] {
    return Object.entries(this.document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        key: `${method.toUpperCase()} ${path}`,
        operation,
      })),
    );
  }

  /** Calls the route and checks the status is documented and the body matches its schema. */
  async check(call: RestCase): Promise<{ status: number; body: unknown }> {
    const key = `${call.method} ${call.path}`;
    const operation = this.document.paths[call.path]?.[call.method.toLowerCase()];
    expect(operation, `${key} is in the OpenAPI document`).toBeDefined();
    const hasBody = call.body !== undefined || call.rawBody !== undefined;
    const res = await fetch(`${this.base}${call.url}`, {
      method: call.method,
      headers: {
        ...this.headers,
        ...(hasBody ? { "content-type": "application/json" } : {}),
        ...call.headers,
      },
      body: call.rawBody ?? (call.body === undefined ? undefined : JSON.stringify(call.body)),
    });
    const text = await res.text();
    const body = text === "" ? undefined : JSON.parse(text);
    expect(res.status, `${key} (${call.url}) answered ${text}`).toBe(call.status);
    const documented = operation.responses[String(res.status)];
    expect(documented, `${key} documents status ${res.status}`).toBeDefined();
    const schema = documented.content?.["application/json"]?.schema;
    if (schema) {
      const valid = this.ajv.validate(schema, body);
      expect(valid, `${key} ${res.status} body ${text} matches: ${this.ajv.errorsText()}`).toBe(true);
    }
    if (call.error !== undefined) {
      const error = (body as { error: string }).error;
      if (typeof call.error === "string") expect(error).toBe(call.error);
      else expect(error).toMatch(call.error);
    }
    let statuses = this.covered.get(key);
    if (!statuses) {
      statuses = new Set();
      this.covered.set(key, statuses);
    }
    statuses.add(res.status);
    return { status: res.status, body };
  }

  /** Operations without a successful call, or that document 400 and were never sent bad input. */
  uncovered(): string[] {
    const missing: string[] = [];
    for (const { key, operation } of this.operations()) {
      const statuses = this.covered.get(key) ?? new Set<number>();
      if (![...statuses].some((s) => s < 300)) missing.push(`${key}: no successful call`);
      if (operation.responses["400"] && !statuses.has(400)) missing.push(`${key}: no bad-input call`);
    }
    return missing;
  }
}
