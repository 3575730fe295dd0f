import type { Logger } from "../logger.js";

export interface AuthThrottleOptions {
  /** Wait before a CONNECT is checked, per failure recently seen from the same address. Default 250 ms. */
  stepMs?: number;
  /** The wait never grows beyond this. Default 2000 ms. */
  maxDelayMs?: number;
  /** An address without a failure for this long starts afresh. Default 60 000 ms. */
  forgetAfterMs?: number;
}

interface Source {
  failures: number;
  lastFailureMs: number;
  /** When the next CONNECT from this address may be checked: attempts are taken one at a time. */
  nextSlotMs: number;
  loggedMs: number;
  unlogged: number;
}

/** Failures from one address are logged at most this often; the rest are counted in the next line. */
const LOG_EVERY_MS = 10_000;
const MAX_SOURCES = 10_000;

/**
 * Slows down password and token guessing. After a failed authentication from an address, every
 * CONNECT from that address (right or wrong) waits its turn: one check per `stepMs × failures`
 * (capped), so guesses sent in parallel are slowed as much as guesses in a row. Failures are
 * logged rate-limited, so a flood does not flood the log.
 */
export class AuthThrottle {
  private readonly sources = new Map<string, Source>();
  private readonly stepMs: number;
  private readonly maxDelayMs: number;
  private readonly forgetAfterMs: number;

  constructor(
    private readonly logger: Logger,
    options: AuthThrottleOptions = {},
  ) {
    this.stepMs = options.stepMs ?? 250;
    this.maxDelayMs = options.maxDelayMs ?? 2000;
    this.forgetAfterMs = options.forgetAfterMs ?? 60_000;
  }

  /** How long a CONNECT from `ip` must wait before it is checked (0: at once); takes its turn. */
  delayFor(ip: string, nowMs = Date.now()): number {
    const source = this.live(ip, nowMs);
    if (source === undefined || source.failures === 0) return 0;
    const step = Math.min(this.stepMs * source.failures, this.maxDelayMs);
    const slot = Math.max(nowMs, source.nextSlotMs) + step;
    source.nextSlotMs = slot;
    return slot - nowMs;
  }

  failed(ip: string, user: string | undefined, nowMs = Date.now()): void {
    let source = this.live(ip, nowMs);
    if (source === undefined) {
      if (this.sources.size >= MAX_SOURCES) this.prune(nowMs);
      source = { failures: 0, lastFailureMs: nowMs, nextSlotMs: nowMs, loggedMs: 0, unlogged: 0 };
      this.sources.set(ip, source);
    }
    source.failures++;
    source.lastFailureMs = nowMs;
    source.unlogged++;
    if (nowMs - source.loggedMs >= LOG_EVERY_MS) {
      this.logger.warn(
        {
          ip,
          user,
          failures: source.unlogged,
          delayMs: Math.min(this.stepMs * source.failures, this.maxDelayMs),
        },
        `nats: authentication failed (${source.unlogged} from ${ip} since the last report); further CONNECTs from there are slowed down`,
      );
      source.loggedMs = nowMs;
      source.unlogged = 0;
    }
  }

  private live(ip: string, nowMs: number): Source | undefined {
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

  private prune(nowMs: number): void {
    for (const ip of [...this.sources.keys()]) this.live(ip, nowMs);
    if (this.sources.size >= MAX_SOURCES) {
      const oldest = this.sources.keys().next().value;
      if (oldest !== undefined) this.sources.delete(oldest);
    }
  }
}
