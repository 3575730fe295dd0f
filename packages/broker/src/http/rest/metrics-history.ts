import { type MetricsSample, type MetricsSamplerOptions, SampleReader } from "./metrics-sampler.js";
import { SampleClock, SampleSeries } from "./sample-rings.js";

/** The broker-wide figures a history keeps, in MetricsSample's order. */
const GLOBAL_FIELDS = [
  "connections",
  "sends_per_s",
  "fetches_per_s",
  "errors_per_s",
  "messages",
  "bytes",
  "mailboxes",
  "agents",
  "agents_online",
] as const;
export const MAILBOX_FIELDS = ["messages", "bytes", "sends_per_s", "fetches_per_s"] as const;
export const GROUP_FIELDS = ["lag", "pending", "leased", "lag_seconds"] as const;

export interface MetricsHistoryOptions extends Omit<MetricsSamplerOptions, "intervalMs"> {
  /** The fine samples' interval (default 5 s); a coarse sample averages `coarseEvery` of them. */
  intervalMs?: number;
  /** Fine samples kept (default 720: an hour at 5 s). */
  fineKeep?: number;
  /** Fine samples per coarse one (default 12: a minute at 5 s). */
  coarseEvery?: number;
  /** Coarse samples kept (default 1440: a day at one a minute). */
  coarseKeep?: number;
  /** Mailboxes with a history of their own (default 200); more wait for one to be deleted. */
  maxMailboxes?: number;
  /** Consumer groups with a history of their own (default 200). */
  maxGroups?: number;
}

/** One reading of everything the history keeps. */
interface Reading {
  at: number;
  global: number[];
  mailboxes: Map<string, number[]>;
  /** Keyed `address\ngroup` (an address holds no line break). */
  groups: Map<string, number[]>;
}

/** One resolution of the history: a clock and its series. */
class Tier {
  readonly clock: SampleClock;
  readonly global: SampleSeries;
  readonly mailboxes = new Map<string, SampleSeries>();
  readonly groups = new Map<string, SampleSeries>();

  constructor(
    readonly capacity: number,
    readonly intervalMs: number,
  ) {
    this.clock = new SampleClock(capacity);
    this.global = new SampleSeries(capacity, GLOBAL_FIELDS.length);
  }

  record(reading: Reading, mailboxes: ReadonlySet<string>, groups: ReadonlySet<string>): void {
    const slot = this.clock.push(reading.at);
    this.global.write(slot, reading.global);
    this.write(slot, this.mailboxes, mailboxes, reading.mailboxes, MAILBOX_FIELDS.length);
    this.write(slot, this.groups, groups, reading.groups, GROUP_FIELDS.length);
  }

  private write(
    slot: number,
    series: Map<string, SampleSeries>,
    tracked: ReadonlySet<string>,
    values: Map<string, number[]>,
    fields: number,
  ): void {
    for (const key of series.keys()) if (!tracked.has(key)) series.delete(key);
    for (const key of tracked) {
      let one = series.get(key);
      if (!one) {
        one = new SampleSeries(this.capacity, fields);
        series.set(key, one);
      }
      one.write(slot, values.get(key) ?? []);
    }
  }
}

/**
 * The share of the broker's time readings may take. Counting a mailbox's messages and a group's
 * lag reads every row they hold: on a backlog of millions one reading holds the event loop for
 * a good part of a second, so readings then come less often instead of every interval.
 */
const MAX_READING_SHARE = 0.02;

/**
 * The earliest the reading after one that started at `startedAt` and took `tookMs` may start:
 * a reading as quick as most waits only for the next interval's tick.
 */
export function nextReadingAt(startedAt: number, tookMs: number): number {
  return startedAt + tookMs / MAX_READING_SHARE;
}

/** Sums of fine readings until a coarse sample is due, averaged per field (NaN skipped). */
class Averager {
  private readonly sums = new Map<string, { sum: number[]; n: number[] }>();
  /** When the first reading summed was taken (undefined: none yet). */
  since?: number;

  add(key: string, values: readonly number[]): void {
    let entry = this.sums.get(key);
    if (!entry) {
      entry = { sum: values.map(() => 0), n: values.map(() => 0) };
      this.sums.set(key, entry);
    }
    values.forEach((value, i) => {
      if (Number.isNaN(value)) return;
      entry.sum[i] += value;
      entry.n[i]++;
    });
  }

  take(key: string): number[] | undefined {
    const entry = this.sums.get(key);
    return entry?.sum.map((sum, i) => (entry.n[i] === 0 ? Number.NaN : sum / entry.n[i]));
  }

  clear(): void {
    this.sums.clear();
    this.since = undefined;
  }
}

/** A mailbox's samples over a range: their interval, their times oldest first, a column per figure. */
export interface MailboxHistory {
  interval_s: number;
  at: number[];
  /** False when the mailbox is beyond the mailboxes kept (its values are then empty). */
  tracked: boolean;
  series: Record<(typeof MAILBOX_FIELDS)[number], (number | null)[]>;
  groups: { name: string; series: Record<(typeof GROUP_FIELDS)[number], (number | null)[]> }[];
}

/**
 * The broker's own memory of its figures, taken whether or not anyone looks: a fine ring (an hour
 * at 5 s) and a coarse ring (a day at 1 min, each point the average of its fine ones), broker-wide,
 * per mailbox and per consumer group. Every ring is allocated at its full size, so memory is
 * bounded by the counts of docs/dashboard.md whatever the traffic.
 */
export class MetricsHistory {
  private readonly fine: Tier;
  private readonly coarse: Tier;
  private readonly coarseEvery: number;
  private readonly maxMailboxes: number;
  private readonly maxGroups: number;
  private readonly reader: SampleReader;
  private readonly averager = new Averager();
  private readonly mailboxes = new Set<string>();
  private readonly groups = new Set<string>();
  private previousAt = 0;
  private latest?: Reading;
  private readonly timer: NodeJS.Timeout;
  private running = false;
  /** No reading starts before this (see nextReadingAt). */
  private nextAt = 0;

  constructor(private readonly options: MetricsHistoryOptions) {
    const intervalMs = options.intervalMs ?? 5_000;
    this.coarseEvery = options.coarseEvery ?? 12;
    this.fine = new Tier(options.fineKeep ?? 720, intervalMs);
    this.coarse = new Tier(options.coarseKeep ?? 1440, intervalMs * this.coarseEvery);
    this.maxMailboxes = options.maxMailboxes ?? 200;
    this.maxGroups = options.maxGroups ?? 200;
    this.reader = new SampleReader(options);
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref();
    void this.tick();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** The last reading's mailboxes (messages) and groups (lag, lag seconds): the Prometheus gauges. */
  current(): {
    mailboxes: { mailbox: string; messages: number }[];
    groups: { mailbox: string; group: string; lag: number; lagSeconds: number }[];
  } {
    const reading = this.latest;
    if (!reading) return { mailboxes: [], groups: [] };
    const lag = GROUP_FIELDS.indexOf("lag");
    const lagSeconds = GROUP_FIELDS.indexOf("lag_seconds");
    return {
      mailboxes: [...reading.mailboxes].map(([mailbox, values]) => ({ mailbox, messages: values[0] })),
      groups: [...reading.groups].map(([key, values]) => {
        const cut = key.indexOf("\n");
        return {
          mailbox: key.slice(0, cut),
          group: key.slice(cut + 1),
          lag: values[lag],
          lagSeconds: values[lagSeconds],
        };
      }),
    };
  }

  /** How far back each resolution reaches, in seconds. */
  spans(): { fine_s: number; coarse_s: number } {
    return {
      fine_s: (this.fine.capacity * this.fine.intervalMs) / 1000,
      coarse_s: (this.coarse.capacity * this.coarse.intervalMs) / 1000,
    };
  }

  /** The broker-wide samples of the last `rangeS` seconds, oldest first. */
  samples(rangeS: number): { interval_s: number; samples: MetricsSample[] } {
    const parts = this.window(rangeS);
    const samples = parts.flatMap(({ tier, slots }) => {
      const columns = GLOBAL_FIELDS.map((_, field) => tier.global.read(field, slots));
      return slots.map((slot, i) => {
        const value = (field: (typeof GLOBAL_FIELDS)[number]) => columns[GLOBAL_FIELDS.indexOf(field)][i];
        const whole = (field: (typeof GLOBAL_FIELDS)[number]) => Math.round(value(field) ?? 0);
        const agents = value("agents");
        const online = value("agents_online");
        return {
          at: tier.clock.times[slot],
          connections: whole("connections"),
          sends_per_s: value("sends_per_s") ?? 0,
          fetches_per_s: value("fetches_per_s") ?? 0,
          errors_per_s: value("errors_per_s") ?? 0,
          messages: whole("messages"),
          bytes: whole("bytes"),
          mailboxes: whole("mailboxes"),
          agents: agents === null ? null : Math.round(agents),
          agents_online: online === null ? null : Math.round(online),
        };
      });
    });
    return { interval_s: parts[0].tier.intervalMs / 1000, samples };
  }

  /** One mailbox's samples and its groups' of the last `rangeS` seconds. */
  mailbox(address: string, rangeS: number): MailboxHistory {
    const parts = this.window(rangeS);
    const tracked = this.mailboxes.has(address);
    const shown = tracked ? parts : [];
    const column = <F extends string>(
      fields: readonly F[],
      series: (tier: Tier) => SampleSeries | undefined,
    ) =>
      Object.fromEntries(
        fields.map((field, i) => [
          field,
          shown.flatMap(({ tier, slots }) => series(tier)?.read(i, slots) ?? slots.map(() => null)),
        ]),
      ) as Record<F, (number | null)[]>;
    const names = [...this.groups]
      .filter((key) => key.startsWith(`${address}\n`))
      .map((key) => key.slice(address.length + 1))
      .sort();
    return {
      interval_s: parts[0].tier.intervalMs / 1000,
      tracked,
      at: shown.flatMap(({ tier, slots }) => slots.map((slot) => tier.clock.times[slot])),
      series: column(MAILBOX_FIELDS, (tier) => tier.mailboxes.get(address)),
      groups: names.map((name) => ({
        name,
        series: column(GROUP_FIELDS, (tier) => tier.groups.get(`${address}\n${name}`)),
      })),
    };
  }

  /**
   * The slots of the last `rangeS` seconds: the fine ring's when it reaches back that far; else the
   * coarse ring's, then the fine samples newer than its last (the minute not averaged yet).
   */
  private window(rangeS: number): { tier: Tier; slots: number[] }[] {
    const since = Date.now() - rangeS * 1000;
    if (rangeS * 1000 <= this.fine.capacity * this.fine.intervalMs) {
      return [{ tier: this.fine, slots: this.fine.clock.slotsSince(since) }];
    }
    const coarse = this.coarse.clock.slotsSince(since);
    const lastCoarse = coarse.length === 0 ? since : this.coarse.clock.times[coarse[coarse.length - 1]] + 1;
    return [
      { tier: this.coarse, slots: coarse },
      { tier: this.fine, slots: this.fine.clock.slotsSince(lastCoarse) },
    ];
  }

  private async tick(): Promise<void> {
    // A slow store must not stack readings up, nor readings take the broker's time.
    const startedAt = Date.now();
    if (this.running || startedAt < this.nextAt) return;
    this.running = true;
    try {
      const reading = await this.read();
      this.nextAt = nextReadingAt(startedAt, Date.now() - startedAt);
      this.latest = reading;
      this.fine.record(reading, this.mailboxes, this.groups);
      this.averager.since ??= reading.at;
      this.averager.add("", reading.global);
      for (const [key, values] of reading.mailboxes) this.averager.add(`m${key}`, values);
      for (const [key, values] of reading.groups) this.averager.add(`g${key}`, values);
      // By time, not by count: readings may come less often than every interval.
      const fine = this.fine.intervalMs;
      if (reading.at - this.averager.since >= (this.coarseEvery - 1) * fine - fine / 2) {
        const average = (prefix: string, keys: Iterable<string>) =>
          new Map([...keys].map((key) => [key, this.averager.take(`${prefix}${key}`) ?? []]));
        this.coarse.record(
          {
            at: reading.at,
            global: this.averager.take("") ?? [],
            mailboxes: average("m", this.mailboxes),
            groups: average("g", this.groups),
          },
          this.mailboxes,
          this.groups,
        );
        this.averager.clear();
      }
    } catch (err) {
      this.options.logger.warn({ err }, "metrics history sample failed");
    } finally {
      this.running = false;
    }
  }

  private async read(): Promise<Reading> {
    const sample = await this.reader.read();
    const global = GLOBAL_FIELDS.map((field) => sample[field] ?? Number.NaN);
    const mailboxes = new Map<string, number[]>();
    const groups = new Map<string, number[]>();
    const { engine, metrics } = this.options;
    const listLimit = this.maxMailboxes * 5;
    const listed = await engine.listMailboxes({ limit: listLimit }).catch(() => undefined);
    const seconds = this.previousAt ? Math.max((sample.at - this.previousAt) / 1000, 0.001) : 0;
    const traffic = metrics.takeMailboxTraffic();
    const rate = (n: number | undefined) => (seconds && n ? n / seconds : 0);
    if (listed) {
      const alive = new Set(listed.map((m) => m.address));
      // A complete list says which mailboxes are gone: their history goes too.
      if (listed.length < listLimit) {
        for (const address of this.mailboxes) if (!alive.has(address)) this.mailboxes.delete(address);
        for (const key of this.groups)
          if (!alive.has(key.slice(0, key.indexOf("\n")))) this.groups.delete(key);
      }
      for (const mailbox of listed) {
        const address = mailbox.address;
        if (!this.mailboxes.has(address) && this.mailboxes.size < this.maxMailboxes)
          this.mailboxes.add(address);
        if (!this.mailboxes.has(address)) continue;
        const counted = traffic.get(address);
        mailboxes.set(address, [
          mailbox.depth.critical + mailbox.depth.urgent + mailbox.depth.normal,
          mailbox.bytes,
          rate(counted?.sends),
          rate(counted?.fetches),
        ]);
        if (mailbox.groups === 0) continue;
        const stats = await engine.groups(address).catch(() => []);
        for (const group of stats) {
          const key = `${address}\n${group.name}`;
          if (!this.groups.has(key) && this.groups.size < this.maxGroups) this.groups.add(key);
          if (!this.groups.has(key)) continue;
          const lagSeconds =
            group.oldestUnackedMs === undefined ? 0 : Math.max(0, (sample.at - group.oldestUnackedMs) / 1000);
          groups.set(key, [group.lag, group.lag - group.leased, group.leased, lagSeconds]);
        }
      }
    }
    this.previousAt = sample.at;
    return { at: sample.at, global, mailboxes, groups };
  }
}
