/** OpenTelemetry export of the broker's spans (and optionally metrics) over OTLP/HTTP. */
export interface TelemetryOptions {
  /**
   * Base URL of an OTLP/HTTP receiver (`http://localhost:4318`); spans go to `/v1/traces` under
   * it, metrics to `/v1/metrics`. Absent: the exporters read the standard `OTEL_EXPORTER_OTLP_*`
   * variables themselves.
   */
  otlpEndpoint?: string;
  /** Also export the broker's request metrics (default false). */
  metrics?: boolean;
  /** How often metrics are exported (default 60 000 ms, or OTEL_METRIC_EXPORT_INTERVAL). */
  metricsIntervalMs?: number;
  /** `service.name` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise (default `mq9`). */
  serviceName?: string;
  /**
   * Register the tracer provider, W3C propagator and an AsyncLocalStorage context manager as
   * OpenTelemetry's globals, so that other components of the process (an orchestrator, the
   * client SDK) trace into the same export. For an application of its own, as `mq9 serve`; an
   * embedding application with its own SDK leaves it off.
   */
  global?: boolean;
}

/**
 * Whether OTLP export is asked for by the standard variables alone: an OTLP endpoint for traces
 * (or for everything), unless the SDK is disabled or the traces exporter is `none`.
 */
export function otlpFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** Whether OTEL_METRICS_EXPORTER names `otlp` (it is a comma-separated list). */
export function otlpMetricsFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.OTEL_METRICS_EXPORTER ?? "").split(",").some((name) => name.trim().toLowerCase() === "otlp");
}
