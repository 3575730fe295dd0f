import { Gauge } from "prom-client";
import type { BrokerMetrics } from "../http/broker-metrics.js";
import type { Logger } from "../logger.js";
import type { Store } from "../store/store.js";

/** A store that can say whether its database answers (PostgresStore can). */
interface PingableStore extends Store {
  ping?(): Promise<boolean>;
  /** Why the store refuses every request now (a newer mq9 migrated its schema). */
  refusal?(): string | undefined;
}

const PROBE_INTERVAL_MS = 2_000;

/**
 * Asks a database-server store every two seconds whether its database answers, for /healthz and
 * a gauge, and logs when that changes. A store in this process (SQLite) has nothing to probe.
 */
export class DatabaseProbe {
  private answering = true;
  private refusedFor?: string;
  private readonly refusedListeners: (() => void)[] = [];
  private timer?: NodeJS.Timeout;

  constructor(private readonly logger: Logger) {}

  /** Whether `store` is one this probe watches. */
  static applies(store: Store): boolean {
    return typeof (store as PingableStore).ping === "function";
  }

  /** Why the store refuses every request, once it does (it logged why). */
  get refused(): string | undefined {
    return this.refusedFor;
  }

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

  /** Calls `listener` once, when the store starts refusing every request. */
  onRefused(listener: () => void): void {
    this.refusedListeners.push(listener);
  }

  /** Starts probing, with the gauge `gaugeName` (1 while the database answers). */
  watch(store: Store, metrics: BrokerMetrics, gaugeName: string, help: string): void {
    const ping = (store as PingableStore).ping?.bind(store);
    const refusal = (store as PingableStore).refusal?.bind(store);
    if (!ping) return;
    const probe = this;
    new Gauge({
      name: gaugeName,
      help,
      registers: [metrics.registry],
      collect() {
        this.set(probe.answering ? 1 : 0);
      },
    });
    const check = () => {
      void ping().then((up) => {
        if (up !== this.answering) {
          if (up) this.logger.info("postgres: the database answers again");
          else this.logger.error("postgres: the database does not answer; requests fail until it is back");
        }
        this.answering = up;
        const refused = refusal?.();
        if (refused !== undefined && this.refusedFor === undefined) {
          this.refusedFor = refused;
          for (const listener of this.refusedListeners) listener();
        }
      });
    };
    check();
    this.timer = setInterval(check, PROBE_INTERVAL_MS);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }
}
