import { statfsSync } from "node:fs";
import { Counter, collectDefaultMetrics, Gauge, Registry as MetricsRegistry } from "prom-client";
import type { AuthGuard } from "../auth/index.js";
import type { Registry } from "../registry.js";
import type { RequestObserver } from "../service/request-observer.js";
import { RequestMetrics } from "./request-metrics.js";

/**
 * How often the event-loop delay histogram (mq9_nodejs_eventloop_lag_p50_seconds and the like)
 * takes a sample. prom-client's default of 10 ms woke every broker 100 times a second, idle or not.
 */
const EVENT_LOOP_SAMPLE_MS = 1_000;

/** Prometheus metrics of one broker, in a registry of its own (several brokers may share a process). */
export class BrokerMetrics implements RequestObserver {
  readonly registry = new MetricsRegistry();
  private readonly requests: RequestMetrics;
  /** Messages moved to a dead-letter mailbox (their deliveries used up, or NAKed terminally). */
  readonly deadLettered: Counter;

  constructor(connections: () => number) {
    // prom-client's names already start with process_ or nodejs_: the prefix is only ours. Its
    // event-loop delay histogram samples on a timer of this period, which wakes an idle process.
    collectDefaultMetrics({
      register: this.registry,
      prefix: "mq9_",
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
    this.requests = new RequestMetrics(this.registry);
    this.deadLettered = new Counter({
      name: "mq9_dead_letters_total",
      help: "messages moved to a dead-letter mailbox: out of deliveries (max_deliver) or NAKed as terminal",
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

  /** 1 while the broker reports itself healthy (what /healthz answers), for the alert rules. */
  watchHealth(healthy: () => boolean): void {
    this.gauge("mq9_healthy", "1 while /healthz answers ok (store writable, transport up)", () =>
      healthy() ? 1 : 0,
    );
  }

  /** The data directory's file system: its free and total bytes (the disk-nearly-full alert). */
  watchDisk(dataDir: string): void {
    const read = (pick: (fs: { bavail: number; blocks: number; bsize: number }) => number) => () => {
      try {
        return pick(statfsSync(dataDir));
      } catch {
        return 0;
      }
    };
    this.gauge(
      "mq9_data_dir_free_bytes",
      "bytes free for the broker on the data directory's file system",
      read((fs) => fs.bavail * fs.bsize),
    );
    this.gauge(
      "mq9_data_dir_size_bytes",
      "size of the data directory's file system",
      read((fs) => fs.blocks * fs.bsize),
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

  /**
   * SENDs and FETCHes answered without error, per mailbox, since the last takeMailboxTraffic():
   * only mailboxes with traffic in that interval hold an entry, so it stays small.
   */
  private mailboxTraffic = new Map<string, { sends: number; fetches: number }>();
  /** Counted only once something takes the counts (the HTTP server's history): else nobody empties the map. */
  private trafficWanted = false;

  /** The per-mailbox counts since the previous call (the dashboard history's rates); starts afresh. */
  takeMailboxTraffic(): Map<string, { sends: number; fetches: number }> {
    this.trafficWanted = true;
    const taken = this.mailboxTraffic;
    this.mailboxTraffic = new Map();
    return taken;
  }

  observe(op: string, failed: boolean, seconds: number, mailAddress?: string): void {
    this.requests.observe(op, failed, seconds);
    if (!this.trafficWanted || failed || mailAddress === undefined) return;
    if (op !== "msg.send" && op !== "msg.fetch") return;
    let traffic = this.mailboxTraffic.get(mailAddress);
    if (!traffic) {
      traffic = { sends: 0, fetches: 0 };
      this.mailboxTraffic.set(mailAddress, traffic);
    }
    if (op === "msg.send") traffic.sends++;
    else traffic.fetches++;
  }
}
