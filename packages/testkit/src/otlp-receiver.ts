import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { until } from "./eventually.js";

/** One span as an OTLP/HTTP receiver got it, ids in hex. */
export interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** Start and end, Unix ms (fractions kept). */
  startMs: number;
  endMs: number;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
};
type KeyValue = { key: string; value: AnyValue };
type JsonSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
};
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: JsonSpan[] }[];
  }[];
};

function plainValue(value: AnyValue): unknown {
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plainValue(value)]));
}

/** OTLP/JSON ids are hex; base64 ones (from a receiver that expects the proto JSON mapping) are turned to hex. */
function hex(id: string | undefined): string {
  if (!id) return "";
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, "base64").toString("hex");
}

/**
 * A small OTLP/HTTP receiver for tests: takes the JSON export of traces (what
 * `@opentelemetry/exporter-trace-otlp-http` sends) on `/v1/traces`, and metrics on `/v1/metrics`
 * as counted requests.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** The bodies received on /v1/metrics, parsed. */
  readonly metrics: unknown[] = [];
  /** Requests that were not OTLP/JSON: their content type, so that a test can say what came. */
  readonly refused: string[] = [];

  private constructor(
    private readonly server: Server,
    /** The base URL (`http://127.0.0.1:<port>`), as `--otlp-endpoint` takes it. */
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const type = req.headers["content-type"] ?? "";
        let body = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
        if (req.method !== "POST" || !type.startsWith("application/json")) {
          receiver?.refused.push(`${req.method} ${req.url} ${type}`);
          res.writeHead(415).end();
          return;
        }
        const parsed = JSON.parse(body.toString("utf8"));
        if (req.url === "/v1/traces") receiver?.take(parsed as ExportRequest);
        else if (req.url === "/v1/metrics") receiver?.metrics.push(parsed);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return receiver;
  }

  /** Waits until a span matching `match` has come, and returns it. */
  span(what: string, match: (span: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan> {
    return until(`the span ${what} at the OTLP receiver`, () => this.spans.find(match), timeoutMs);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private take(request: ExportRequest): void {
    for (const resourceSpans of request.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            service,
            scope: scopeSpans.scope?.name ?? "",
            traceId: hex(span.traceId),
            spanId: hex(span.spanId),
            parentSpanId: hex(span.parentSpanId),
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((link) => ({
              traceId: hex(link.traceId),
              spanId: hex(link.spanId),
            })),
            status: span.status?.code ?? 0,
            startMs: Number(BigInt(span.startTimeUnixNano ?? 0) / 1000n) / 1000,
            endMs: Number(BigInt(span.endTimeUnixNano ?? 0) / 1000n) / 1000,
          });
        }
      }
    }
  }
}
