import { Gauge } from "prom-client";
import { type Logger, silentLogger } from "../../logger.js";
import type { StoreWatchOptions } from "../store.js";

const PROBE_INTERVAL_MS = 2_000;

/** The gauge of the probe: a cluster node names it after the shared database. */
const GAUGES = {
  broker: { name: "mq9_database_up", help: "1 while the database answered the last probe" },
  cluster: {
    name: "mq9_cluster_database_up",
    help: "1 while the shared database answered this node's last probe",
  },
};

/**
 * Asks the PostgreSQL store every two seconds whether its database answers, for /healthz and a
 * gauge, and logs when that changes. Started by the first Store.watch, stopped by the store's close.
 */
export class DatabaseProbe {
  private answering = true;
  private refusedFor?: string;
  private readonly refusedListeners: ((why: string) => void)[] = [];
  private logger: Logger = silentLogger;
  private timer?: NodeJS.Timeout;

  constructor(
    /** Whether the database answers (PostgresStore.ping). */
    private readonly ping: () => Promise<boolean>,
    /** Why the store refuses every request, once it does (PostgresStore.refusal). */
    private readonly refusal: () => string | undefined,
  ) {}

  /**
   * Whether the store serves: its database answered the last probe (true before the first) and
   * it does not refuse every request.
   */
  get serving(): boolean {
    return this.answering && this.refusedFor === undefined;
  }

  /** What /healthz says of the database: whether it answers, and why the store refuses, if it does. */
  report(): { up: boolean; refused?: string } {
    return { up: this.answering, ...(this.refusedFor ? { refused: this.refusedFor } : {}) };
  }

  /** Adds the gauge (1 while the database answers) to `options.metrics` and starts probing. */
  watch(options: StoreWatchOptions): void {
    const probe = this;
    const gauge = options.cluster ? GAUGES.cluster : GAUGES.broker;
    new Gauge({
      ...gauge,
      registers: [options.metrics],
      collect() {
        this.set(probe.answering ? 1 : 0);
      },
    });
    this.logger = options.logger;
    if (options.onRefused) this.refusedListeners.push(options.onRefused);
    if (this.timer) return;
    this.check();
    this.timer = setInterval(() => this.check(), PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    void this.ping().then((up) => {
      if (up !== this.answering) {
        if (up) this.logger.info("postgres: the database answers again");
        else this.logger.error("postgres: the database does not answer; requests fail until it is back");
      }
      this.answering = up;
      const refused = this.refusal();
      if (refused !== undefined && this.refusedFor === undefined) {
        this.refusedFor = refused;
        for (const listener of this.refusedListeners) listener(refused);
      }
    });
  }
}
