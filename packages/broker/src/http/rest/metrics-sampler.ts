import type { MessagingEngine } from "../../engine/messaging-engine.js";
import type { Logger } from "../../logger.js";
import type { Registry } from "../../registry.js";
import type { BrokerMetrics } from "../broker-metrics.js";

/** One point of the dashboard's charts. */
export interface MetricsSample {
  at: number;
  connections: number;
  sends_per_s: number;
  fetches_per_s: number;
  errors_per_s: number;
  messages: number;
  bytes: number;
  mailboxes: number;
  agents: number | null;
  agents_online: number | null;
}

export interface MetricsSamplerOptions {
  metrics: BrokerMetrics;
  engine: MessagingEngine;
  connections: () => number;
  /** Asked directly, not through the service: the sampler's reads are not requests to count. */
  registry?: Registry;
  logger: Logger;
  intervalMs?: number;
}

interface Counted {
  at: number;
  sends: number;
  fetches: number;
  errors: number;
}

/** Reads the broker's figures; each reading's rates are over the time since its previous one. */
export class SampleReader {
  private last?: Counted;

  constructor(private readonly options: Omit<MetricsSamplerOptions, "intervalMs">) {}

  async read(): Promise<MetricsSample> {
    const { metrics, engine } = this.options;
    let sends = 0;
    let fetches = 0;
    let errors = 0;
    for (const [op, counts] of metrics.requestCounts()) {
      if (op === "msg.send") sends += counts.ok + counts.errors;
      if (op === "msg.fetch") fetches += counts.ok + counts.errors;
      errors += counts.errors;
    }
    const at = Date.now();
    const previous = this.last;
    this.last = { at, sends, fetches, errors };
    const seconds = previous ? Math.max((at - previous.at) / 1000, 0.001) : 0;
    const rate = (now: number, before: number | undefined) =>
      previous && before !== undefined ? Math.max(0, (now - before) / seconds) : 0;
    const totals = await engine.totals().catch(() => ({ mailboxes: 0, messages: 0, bytes: 0 }));
    const agents = this.options.registry ? await this.agentCounts() : { all: null, online: null };
    return {
      at,
      connections: this.options.connections(),
      sends_per_s: rate(sends, previous?.sends),
      fetches_per_s: rate(fetches, previous?.fetches),
      errors_per_s: rate(errors, previous?.errors),
      messages: totals.messages,
      bytes: totals.bytes,
      mailboxes: totals.mailboxes,
      agents: agents.all,
      agents_online: agents.online,
    };
  }

  private async agentCounts(): Promise<{ all: number; online: number }> {
    const registry = this.options.registry!;
    const count = async (online: boolean) => {
      const body = Buffer.from(JSON.stringify({ online, limit: 1000, include_agent_info: false }));
      return (await registry.discover(body)).agents.length;
    };
    return { all: await count(false), online: await count(true) };
  }
}

/**
 * Samples the broker's figures at a fixed interval while someone looks (a stream is open or the
 * summary was asked for recently): the live stream's ticks. The history is MetricsHistory's.
 */
export class MetricsSampler {
  private readonly listeners = new Set<(sample: MetricsSample) => void>();
  private readonly reader: SampleReader;
  private timer?: NodeJS.Timeout;
  private lastWantedMs = 0;
  private sampling?: Promise<MetricsSample>;
  private readonly intervalMs: number;

  constructor(private readonly options: MetricsSamplerOptions) {
    this.intervalMs = options.intervalMs ?? 2_000;
    this.reader = new SampleReader(options);
  }

  /** A sample taken now (the summary's figures). */
  async now(): Promise<MetricsSample> {
    this.wanted();
    return this.sample();
  }

  /** Calls `listener` with every new sample until the returned function is called. */
  subscribe(listener: (sample: MetricsSample) => void): () => void {
    this.listeners.add(listener);
    this.wanted();
    return () => this.listeners.delete(listener);
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  private wanted(): void {
    this.lastWantedMs = Date.now();
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    // Nobody looking for a minute: stop until someone does.
    if (this.listeners.size === 0 && Date.now() - this.lastWantedMs > 60_000) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    try {
      const sample = await this.sample();
      for (const listener of this.listeners) listener(sample);
    } catch (err) {
      this.options.logger.warn({ err }, "dashboard metrics sample failed");
    }
  }

  private sample(): Promise<MetricsSample> {
    // Concurrent callers share one sample: the rates need consecutive readings.
    this.sampling ??= this.reader.read().finally(() => {
      this.sampling = undefined;
    });
    return this.sampling;
  }
}
