import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry as MetricsRegistry } from "prom-client";
import type { Registry } from "../registry/registry.js";
import type { RequestObserver } from "../service/request-observer.js";

/** Prometheus metrics of one broker, in a registry of its own (several brokers may share a process). */
export class BrokerMetrics implements RequestObserver {
  readonly registry = new MetricsRegistry();
  private readonly requests: Counter<"op" | "outcome">;
  private readonly latency: Histogram<"op">;
  /** Labelled children by operation and outcome: prom-client would hash the labels on every request. */
  private readonly series = new Map<
    string,
    { requests: { inc(): void }; latency: { observe(value: number): void } }
  >();

  constructor(connections: () => number) {
    collectDefaultMetrics({ register: this.registry, prefix: "mq9_process_" });
    this.requests = new Counter({
      name: "mq9_requests_total",
      help: "mq9 requests answered, by operation and outcome",
      labelNames: ["op", "outcome"],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: "mq9_request_duration_seconds",
      help: "time from receiving an mq9 request to its reply (FETCH includes its long-poll wait)",
      labelNames: ["op"],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5],
      registers: [this.registry],
    });
    new Gauge({
      name: "mq9_client_connections",
      help: "clients connected to the NATS-protocol listener",
      registers: [this.registry],
      collect() {
        this.set(connections());
      },
    });
  }

  /** Gauges of the registry's background work, so operators (and the benchmark) see when it is done. */
  watchRegistry(registry: Registry): void {
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    gauge("mq9_registry_embedding", "1 while registered skills wait for their vectors", () =>
      registry.status().embedding ? 1 : 0,
    );
    gauge(
      "mq9_registry_vectors_unindexed",
      "skill vectors searched exactly until they enter the approximate index",
      () => registry.status().vectors?.pending ?? 0,
    );
    gauge(
      "mq9_registry_vectors_indexed",
      "skill vectors in the approximate index",
      () => registry.status().vectors?.indexed ?? 0,
    );
    gauge("mq9_registry_index_building", "1 while the approximate vector index is being built", () =>
      registry.status().vectors?.building ? 1 : 0,
    );
  }

  observe(op: string, failed: boolean, seconds: number): void {
    const key = failed ? `${op}!` : op;
    let series = this.series.get(key);
    if (!series) {
      series = {
        requests: this.requests.labels({ op, outcome: failed ? "error" : "ok" }),
        latency: this.latency.labels({ op }),
      };
      this.series.set(key, series);
    }
    series.requests.inc();
    series.latency.observe(seconds);
  }
}
