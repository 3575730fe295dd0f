import { BrokerDefaults } from "../broker-defaults.js";
import type { Logger } from "../logger.js";

export interface AuthThrottleOptions {
  /** Wait before an attempt of a failing name is checked, per failure recently seen for it. Default 250 ms. */
  stepMs?: number;
  /** That wait never grows beyond this; keep it below `maxWaitMs`. Default 1000 ms. */
  maxDelayMs?: number;
  /**
   * An attempt whose turn would come later than this is refused at once, unchecked ("throttled").
   * The listener uses at most half its auth timeout, so a waiting client never times out. Default 1000 ms.
   */
  maxWaitMs?: number;
  /** An address (or name) without a failure for this long starts afresh. Default 60 000 ms. */
  forgetAfterMs?: number;
  /**
   * An address that failed with this many different names is trying names: then a name that did
   * not sign in from there recently waits its turn too. Default 4.
   */
  sprayNames?: number;
}

/** Which side of the broker an attempt came through (a label of the metrics and log lines). */
export type AuthTransport = "nats" | "http";

/** What the throttle says about one attempt before its credentials are checked. */
export type Admission =
  /** Check after `delayMs` (0: at once); `rank` orders costly checks, lower first. */
  | { readonly shed: false; readonly delayMs: number; readonly rank: number }
  /** Refuse unchecked: the address's queue of failing attempts is full for `retryAfterMs`. */
  | { readonly shed: true; readonly retryAfterMs: number };

/** Ranks of costly checks: a name that signed in from here recently goes first, failing names last. */
export const RANK_KNOWN = 0;
export const RANK_NEW = 1;
const RANK_FAILING = 2;

interface Source {
  failures: number;
  lastFailureMs: number;
  /** When the next paced attempt from this address may be checked: paced attempts go one at a time. */
  nextSlotMs: number;
  /** Names that failed from here since the address was last forgotten (at most sprayNames are kept). */
  failedNames: Set<string>;
  loggedMs: number;
  unloggedFailures: number;
  unloggedShed: number;
}

interface Lane {
  failures: number;
  lastFailureMs: number;
  lastSuccessMs: number;
}

/** Failures from one address are logged at most this often; the rest are counted in the next line. */
const LOG_EVERY_MS = 10_000;
/** A name that signed in from an address keeps going first from there for this long. */
const REMEMBER_SUCCESS_MS = 10 * 60_000;
const MAX_ENTRIES = 10_000;
/** Longer names are cut: a guesser's names must not grow the throttle's memory. */
const MAX_NAME = 128;

/**
 * Slows down guessing of credentials while honest clients from the same address keep signing in.
 *
 * State is kept per address and per (address, name), where the name is the user name, the NKey,
 * or "token". A name with no recent failure from an address is checked at once, whatever else
 * fails from there. A name that failed is paced: its attempts wait their turn, one per
 * `stepMs × failures` (at most `maxDelayMs`), in one queue per address shared by every failing name,
 * so guesses sent in parallel are slowed as much as guesses in a row. A turn further away than
 * `maxWaitMs` is not waited for: the attempt is refused unchecked. An address that failed with
 * `sprayNames` different names also paces the names that did not sign in from it recently.
 */
export class AuthThrottle {
  private readonly sources = new Map<string, Source>();
  private readonly lanes = new Map<string, Lane>();
  private readonly stepMs: number;
  private readonly maxDelayMs: number;
  readonly maxWaitMs: number;
  private readonly forgetAfterMs: number;
  private readonly sprayNames: number;

  constructor(
    private readonly logger: Logger,
    options: AuthThrottleOptions = {},
  ) {
    const defaults = BrokerDefaults.authThrottle;
    this.stepMs = options.stepMs ?? defaults.stepMs;
    this.maxDelayMs = options.maxDelayMs ?? defaults.maxDelayMs;
    this.maxWaitMs = options.maxWaitMs ?? Math.max(defaults.maxWaitMs, this.maxDelayMs);
    this.forgetAfterMs = options.forgetAfterMs ?? defaults.forgetAfterMs;
    this.sprayNames = options.sprayNames ?? defaults.sprayNames;
  }

  /**
   * When an attempt of `name` from `ip` may be checked, and takes its turn. `maxWaitMs` lowers the
   * throttle's own bound (the listener passes half its auth timeout).
   */
  admit(ip: string, name: string, maxWaitMs = this.maxWaitMs, nowMs = Date.now()): Admission {
    const source = this.liveSource(ip, nowMs);
    const lane = this.liveLane(ip, name, nowMs);
    const knownHere = lane !== undefined && lane.lastSuccessMs > 0;
    if (lane === undefined || lane.failures === 0) {
      const spraying = source !== undefined && source.failedNames.size >= this.sprayNames;
      if (!spraying || knownHere) return { shed: false, delayMs: 0, rank: knownHere ? RANK_KNOWN : RANK_NEW };
    }
    // Paced: the name failed from here, or the address is trying names and this one is new to it.
    const queue = source ?? this.newSource(ip, nowMs);
    const failures = lane !== undefined && lane.failures > 0 ? lane.failures : Math.max(queue.failures, 1);
    const step = Math.min(this.stepMs * failures, this.maxDelayMs);
    const slot = Math.max(nowMs, queue.nextSlotMs) + step;
    const wait = Math.min(maxWaitMs, this.maxWaitMs);
    if (slot - nowMs > wait) return { shed: true, retryAfterMs: Math.max(slot - wait - nowMs, step) };
    queue.nextSlotMs = slot;
    return { shed: false, delayMs: slot - nowMs, rank: RANK_FAILING + failures };
  }

  /** The credentials of `name` verified: it goes first from this address from now on. */
  succeeded(ip: string, name: string, nowMs = Date.now()): void {
    const lane = this.liveLane(ip, name, nowMs) ?? this.newLane(ip, name, nowMs);
    lane.lastSuccessMs = nowMs;
  }

  /** The credentials of `name` did not verify. */
  failed(ip: string, name: string, transport: AuthTransport, nowMs = Date.now()): void {
    const source = this.liveSource(ip, nowMs) ?? this.newSource(ip, nowMs);
    source.failures++;
    source.lastFailureMs = nowMs;
    if (source.failedNames.size < this.sprayNames) source.failedNames.add(clip(name));
    source.unloggedFailures++;
    const lane = this.liveLane(ip, name, nowMs) ?? this.newLane(ip, name, nowMs);
    lane.failures++;
    lane.lastFailureMs = nowMs;
    this.report(ip, source, transport, nowMs);
  }

  /** An attempt was refused unchecked (see `admit`). */
  shed(ip: string, transport: AuthTransport, nowMs = Date.now()): void {
    const source = this.liveSource(ip, nowMs);
    if (source === undefined) return;
    source.unloggedShed++;
    this.report(ip, source, transport, nowMs);
  }

  private report(ip: string, source: Source, transport: AuthTransport, nowMs: number): void {
    if (nowMs - source.loggedMs < LOG_EVERY_MS) return;
    const failures = source.unloggedFailures;
    const refused = source.unloggedShed;
    this.logger.warn(
      { ip, transport, failures, throttled: refused, names: source.failedNames.size },
      `auth: authentication failed (${failures} from ${ip} since the last report, ${refused} more refused unchecked); its failing names are slowed down, names that sign in are not`,
    );
    source.loggedMs = nowMs;
    source.unloggedFailures = 0;
    source.unloggedShed = 0;
  }

  private newSource(ip: string, nowMs: number): Source {
    if (this.sources.size >= MAX_ENTRIES) this.prune(this.sources, (key) => this.liveSource(key, nowMs));
    const source: Source = {
      failures: 0,
      lastFailureMs: nowMs,
      nextSlotMs: nowMs,
      failedNames: new Set(),
      loggedMs: 0,
      unloggedFailures: 0,
      unloggedShed: 0,
    };
    this.sources.set(ip, source);
    return source;
  }

  private newLane(ip: string, name: string, nowMs: number): Lane {
    if (this.lanes.size >= MAX_ENTRIES) this.prune(this.lanes, (key) => this.liveLaneByKey(key, nowMs));
    const lane: Lane = { failures: 0, lastFailureMs: 0, lastSuccessMs: 0 };
    this.lanes.set(laneKey(ip, name), lane);
    return lane;
  }

  private liveSource(ip: string, nowMs: number): Source | undefined {
    const source = this.sources.get(ip);
    if (
      source !== undefined &&
      nowMs - source.lastFailureMs > this.forgetAfterMs &&
      source.nextSlotMs <= nowMs
    ) {
      this.sources.delete(ip);
      return undefined;
    }
    return source;
  }

  private liveLane(ip: string, name: string, nowMs: number): Lane | undefined {
    return this.liveLaneByKey(laneKey(ip, name), nowMs);
  }

  private liveLaneByKey(key: string, nowMs: number): Lane | undefined {
    const lane = this.lanes.get(key);
    if (lane === undefined) return undefined;
    if (lane.failures > 0 && nowMs - lane.lastFailureMs > this.forgetAfterMs) {
      lane.failures = 0;
    }
    if (lane.failures === 0 && nowMs - lane.lastSuccessMs > REMEMBER_SUCCESS_MS) {
      this.lanes.delete(key);
      return undefined;
    }
    return lane;
  }

  /** Drops what was forgotten; when that is not enough, the oldest entry. */
  private prune<T>(map: Map<string, T>, live: (key: string) => T | undefined): void {
    for (const key of [...map.keys()]) live(key);
    if (map.size >= MAX_ENTRIES) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }
}

function clip(name: string): string {
  return name.length > MAX_NAME ? name.slice(0, MAX_NAME) : name;
}

function laneKey(ip: string, name: string): string {
  return `${ip}\u0000${clip(name)}`;
}
