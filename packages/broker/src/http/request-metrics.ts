import type { Registry as MetricsRegistry } from "prom-client";

/** Latency buckets (seconds) of `mq9_request_duration_seconds`. */
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5];

interface OpSeries {
  ok: number;
  errors: number;
  /** Per bucket, the requests whose latency fell in it (not yet cumulative); the last is +Inf. */
  inBucket: Float64Array;
  sum: number;
}

type MetricValue = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * `mq9_requests_total` and `mq9_request_duration_seconds`, counted in plain
 * numbers per operation and handed to prom-client only when scraped:
 * prom-client's own counters and histograms check and hash their labels on
 * every increment, a cost every request would pay.
 */
export class RequestMetrics {
  private readonly byOp = new Map<string, OpSeries>();

  constructor(registry: MetricsRegistry) {
    const metric = (
      name: string,
      help: string,
      type: "counter" | "histogram",
      values: () => MetricValue[],
    ) => {
      const get = async () => ({ name, help, type, aggregator: "sum" as const, values: values() });
      // A custom metric as prom-client's registry reads it: name, help, type and get().
      registry.registerMetric({ name, help, type, aggregator: "sum", get } as never);
    };
    metric("mq9_requests_total", "mq9 requests answered, by operation and outcome", "counter", () =>
      this.requestValues(),
    );
    metric(
      "mq9_request_duration_seconds",
      "time from receiving an mq9 request to its reply (FETCH includes its long-poll wait)",
      "histogram",
      () => this.latencyValues(),
    );
  }

  observe(op: string, failed: boolean, seconds: number): void {
    let series = this.byOp.get(op);
    if (!series) {
      series = { ok: 0, errors: 0, inBucket: new Float64Array(BUCKETS.length + 1), sum: 0 };
      this.byOp.set(op, series);
    }
    if (failed) series.errors++;
    else series.ok++;
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]) bucket++;
    series.inBucket[bucket]++;
    series.sum += seconds;
  }

  /** Requests answered so far, by operation. */
  counts(): Map<string, { ok: number; errors: number }> {
    return new Map([...this.byOp].map(([op, series]) => [op, { ok: series.ok, errors: series.errors }]));
  }

  private requestValues(): MetricValue[] {
    const values: MetricValue[] = [];
    for (const [op, series] of this.byOp) {
      if (series.ok > 0) values.push({ labels: { op, outcome: "ok" }, value: series.ok });
      if (series.errors > 0) values.push({ labels: { op, outcome: "error" }, value: series.errors });
    }
    return values;
  }

  private latencyValues(): MetricValue[] {
    const values: MetricValue[] = [];
    const name = "mq9_request_duration_seconds";
    for (const [op, series] of this.byOp) {
      let cumulative = 0;
      for (let i = 0; i <= BUCKETS.length; i++) {
        cumulative += series.inBucket[i];
        const le = i < BUCKETS.length ? BUCKETS[i] : "+Inf";
        values.push({ labels: { le, op }, value: cumulative, metricName: `${name}_bucket` });
      }
      values.push({ labels: { op }, value: series.sum, metricName: `${name}_sum` });
      values.push({ labels: { op }, value: cumulative, metricName: `${name}_count` });
    }
    return values;
  }
}
