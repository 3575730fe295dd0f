// Loaded with a dynamic import only when OTLP export is configured: a broker without it never
// loads the OpenTelemetry SDK.
import { Headers, parseHeaderBlock, parseTraceparent } from "@mq9/protocol";
import {
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { RequestObserver } from "../service/request-observer.js";
import type { RequestSpan, RequestTracing } from "./request-tracing.js";
import type { TelemetryOptions } from "./telemetry-options.js";

/** The span context a request's header block names in its `traceparent`, as a parent. */
function parentOf(header: Uint8Array | undefined): Context {
  if (header === undefined) return ROOT_CONTEXT;
  const headers = parseHeaderBlock(header);
  const parent = parseTraceparent(headers.get(Headers.traceparent));
  if (parent === undefined) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

class OtlpRequestSpan implements RequestSpan {
  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
  ) {}

  child(name: string): () => void {
    const child = this.tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
    return () => child.end();
  }

  set(name: string, value: string | number): void {
    this.span.setAttribute(name, value);
  }

  end(err?: unknown): void {
    if (err !== undefined) {
      const error = err instanceof Error ? err : new Error(String(err));
      const code = (error as { code?: unknown }).code;
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      this.span.setAttribute("error.type", typeof code === "string" ? code : error.name);
    }
    this.span.end();
  }
}

/** The broker's request metrics, exported over OTLP: a count and a duration histogram per request kind. */
class OtlpRequestMetrics implements RequestObserver {
  private readonly requests;
  private readonly duration;

  constructor(readonly provider: MeterProvider) {
    const meter = provider.getMeter("@mq9/broker");
    this.requests = meter.createCounter("mq9.broker.requests", {
      description: "mq9 requests answered, by request kind and outcome",
    });
    this.duration = meter.createHistogram("mq9.broker.request.duration", {
      description: "time to answer an mq9 request (a FETCH's long-poll included)",
      unit: "s",
    });
  }

  observe(op: string, failed: boolean, seconds: number): void {
    const attributes = { "messaging.operation.name": op, outcome: failed ? "error" : "ok" };
    this.requests.add(1, attributes);
    this.duration.record(seconds, attributes);
  }
}

/** OTEL_METRIC_EXPORT_INTERVAL, when it is a number of ms. */
function envIntervalMs(): number | undefined {
  const value = Number(process.env.OTEL_METRIC_EXPORT_INTERVAL);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The broker's OTLP export: its tracer provider, the service's request spans, and shutdown. */
export class OtlpTelemetry implements RequestTracing {
  private readonly tracer: Tracer;

  private constructor(
    readonly tracerProvider: TracerProvider & { shutdown(): Promise<void>; forceFlush(): Promise<void> },
    private readonly global: boolean,
    /** Set with `metrics`: told about every request, as the Prometheus metrics are. */
    readonly requestMetrics?: OtlpRequestMetrics,
  ) {
    this.tracer = tracerProvider.getTracer("@mq9/broker");
  }

  static start(options: TelemetryOptions): OtlpTelemetry {
    const resource = defaultResource()
      .merge(resourceFromAttributes({ "service.name": options.serviceName ?? "mq9" }))
      .merge(detectResources({ detectors: [envDetector] }));
    const base = options.otlpEndpoint?.replace(/\/+$/, "");
    const exporter = new OTLPTraceExporter(base === undefined ? {} : { url: `${base}/v1/traces` });
    const provider = new BasicTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(exporter)],
    });
    if (options.global) {
      trace.setGlobalTracerProvider(provider);
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    }
    let metrics: OtlpRequestMetrics | undefined;
    if (options.metrics) {
      const reader = new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(base === undefined ? {} : { url: `${base}/v1/metrics` }),
        exportIntervalMillis: options.metricsIntervalMs ?? envIntervalMs() ?? 60_000,
      });
      metrics = new OtlpRequestMetrics(new MeterProvider({ resource, readers: [reader] }));
    }
    return new OtlpTelemetry(provider, options.global === true, metrics);
  }

  request(op: string, mailAddress: string | undefined, header: Uint8Array | undefined): RequestSpan {
    const attributes: Record<string, string> = { "messaging.system": "mq9", "messaging.operation.name": op };
    if (mailAddress !== undefined) attributes["messaging.destination.name"] = mailAddress;
    const span = this.tracer.startSpan(`mq9 ${op}`, { kind: SpanKind.SERVER, attributes }, parentOf(header));
    return new OtlpRequestSpan(this.tracer, span);
  }

  /** Sends the spans still buffered. */
  async flush(): Promise<void> {
    await this.tracerProvider.forceFlush();
    await this.requestMetrics?.provider.forceFlush();
  }

  /** Sends what is buffered, then stops exporting. */
  async shutdown(): Promise<void> {
    await this.tracerProvider.shutdown();
    await this.requestMetrics?.provider.shutdown();
    if (this.global) {
      trace.disable();
      propagation.disable();
      context.disable();
    }
  }
}
