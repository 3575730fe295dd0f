import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/** An application's OpenTelemetry SDK, as an agent would register it, for a test process. */
export interface TestTracing {
  /** Sends every ended span. */
  flush(): Promise<void>;
  /** Flushes, then unregisters the globals. */
  shutdown(): Promise<void>;
}

/**
 * Registers a tracer provider exporting to `otlpUrl` (OTLP/HTTP JSON) as the global one, with an
 * AsyncLocalStorage context manager and the W3C propagator, as an application using
 * `@mq9/client` with OpenTelemetry does.
 */
export function registerTestTracing(otlpUrl: string, serviceName: string): TestTracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${otlpUrl}/v1/traces` }))],
  });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
