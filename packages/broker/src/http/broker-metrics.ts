import { Counter, collectDefaultMetrics, Gauge, Registry as MetricsRegistry } from "prom-client";
import type { AuthGuard } from "../auth/index.js";
import type { Registry } from "../registry.js";
import type { RequestObserver } from "../service/request-observer.js";
import type { StoreLogStatus } from "../store/sqlite-store.js";
import { RequestMetrics } from "./request-metrics.js";

/** Prometheus metrics of one broker, in a registry of its own (several brokers may share a process). */
export class BrokerMetrics implements RequestObserver {
  readonly registry = new MetricsRegistry();
  private readonly requests: RequestMetrics;

  constructor(connections: () => number) {
    // prom-client's names already start with process_ or nodejs_: the prefix is only ours.
    collectDefaultMetrics({ register: this.registry, prefix: "mq9_" });
    this.requests = new RequestMetrics(this.registry);
    new Gauge({
      name: "mq9_client_connections",
      help: "clients connected to the NATS-protocol listener",
      registers: [this.registry],
      collect() {
        this.set(connections());
      },
    });
  }

  /** Gauges of the message log: how big it is, and how far SQLite is behind it. */
  watchStore(status: () => StoreLogStatus | undefined): void {
    const gauge = this.gauge;
    gauge("mq9_store_log_segments", "segment files of the message log", () => status()?.segments ?? 0);
    gauge(
      "mq9_store_log_message_bytes",
      "header and payload bytes of stored messages in the message log",
      () => status()?.messageBytes ?? 0,
    );
    gauge(
      "mq9_store_rows_waiting",
      "SENDs in the message log whose rows are not in SQLite yet",
      () => status()?.rowsWaiting ?? 0,
    );
    gauge("mq9_store_log_bytes", "bytes of the message log's segment files", () => status()?.logBytes ?? 0);
    gauge("mq9_store_wal_bytes", "bytes of the SQLite WAL file", () => status()?.walBytes ?? 0);
    gauge(
      "mq9_store_db_free_bytes",
      "unused pages in the SQLite database file, in bytes",
      () => status()?.dbFreeBytes ?? 0,
    );
    gauge(
      "mq9_store_reclaimable_bytes",
      "bytes on disk holding nothing live (dead log bytes, the WAL, free database pages), given back on the reclaim schedule",
      () => status()?.reclaimableBytes ?? 0,
    );
    new Counter({
      name: "mq9_store_corrupt_records_total",
      help: "records of the message log whose bytes did not match their checksum (their messages are not served)",
      registers: [this.registry],
      collect() {
        // The store keeps the count; the counter shows it.
        this.reset();
        this.inc(status()?.corruptRecords ?? 0);
      },
    });
  }

  /** Gauges of the registry's background work, so operators (and the benchmark) see when it is done. */
  watchRegistry(registry: Registry): void {
    const gauge = this.gauge;
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
    gauge(
      "mq9_registry_vector_points",
      "distinct vectors in the approximate index (replicas' identical skills share one)",
      () => registry.status().vectors?.points ?? registry.status().vectors?.indexed ?? 0,
    );
    gauge("mq9_registry_index_building", "1 while the approximate vector index is being built", () =>
      registry.status().vectors?.building ? 1 : 0,
    );
  }

  /** Counters of refused and throttled sign-ins and of password checks, on both ports. */
  watchAuth(guard: AuthGuard): void {
    const counts = guard.counts;
    const checks = guard.users.passwordChecks;
    // The guard keeps the counts; the counters show them.
    new Counter({
      name: "mq9_auth_failures_total",
      help: "sign-ins refused for wrong credentials (reason invalid) or none (reason missing), by transport",
      labelNames: ["transport", "reason"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [key, n] of counts.failures) {
          const [transport, reason] = key.split(" ");
          this.inc({ transport, reason }, n);
        }
      },
    });
    new Counter({
      name: "mq9_auth_throttled_total",
      help: "sign-ins of failing names that waited their turn (outcome delayed) or were refused unchecked (outcome refused), by transport",
      labelNames: ["transport", "outcome"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [key, n] of counts.throttled) {
          const [transport, outcome] = key.split(" ");
          this.inc({ transport, outcome }, n);
        }
      },
    });
    new Counter({
      name: "mq9_auth_password_checks_total",
      help: "password checks run, by hash (bcrypt or plain) and by what they ran against (a user's secret, or the dummy that stands in for an unknown name or a failure)",
      labelNames: ["hash", "against"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const hash of ["bcrypt", "plain"] as const) {
          for (const against of ["user", "dummy"] as const)
            this.inc({ hash, against }, checks[hash][against]);
        }
      },
    });
    this.gauge(
      "mq9_auth_checks_queued",
      "bcrypt checks waiting for their turn",
      () => guard.users.pool.queued,
    );
  }

  private readonly gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  };

  /** Requests answered so far, by operation (what the REST API's metrics summary counts). */
  requestCounts(): Map<string, { ok: number; errors: number }> {
    return this.requests.counts();
  }

  observe(op: string, failed: boolean, seconds: number): void {
    this.requests.observe(op, failed, seconds);
  }
}
