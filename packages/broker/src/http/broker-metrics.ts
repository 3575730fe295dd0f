import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { RequestObserver } from "../service/request-observer.js";

/** Prometheus metrics of one broker, in a registry of its own (several brokers may share a process). */
export class BrokerMetrics implements RequestObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<"op" | "outcome">;
  private readonly latency: Histogram<"op">;

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

  observe(op: string, failed: boolean, seconds: number): void {
    this.requests.inc({ op, outcome: failed ? "error" : "ok" });
    this.latency.observe({ op }, seconds);
  }
}
