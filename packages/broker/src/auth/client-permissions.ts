import type { Permissions, SubscribeDecision } from "./permissions.js";

/** Decisions kept per connection; the cache is dropped when full, which is cheap and rare. */
const MAX_CACHED = 1024;
/** Reply subjects a connection may answer at once; the expired ones go first when it is full. */
const MAX_PENDING_RESPONSES = 10_000;

interface PendingResponse {
  left: number;
  /** 0: never expires. */
  untilMs: number;
}

/**
 * One connection's view of its user's permissions: decisions cached per subject (a publish check
 * is then one map lookup), and the reply subjects of the requests it received, which
 * `allowResponses` lets it answer.
 */
export class ClientPermissions {
  private readonly publishCache = new Map<string, boolean>();
  private readonly receiveCache = new Map<string, boolean>();
  private readonly pending: Map<string, PendingResponse> | undefined;

  constructor(private readonly rules: Permissions) {
    if (rules.responses !== undefined) this.pending = new Map();
  }

  /** Whether the connection may publish here; a response allowance is used up by the publish. */
  mayPublish(subject: string): boolean {
    let allowed = this.publishCache.get(subject);
    if (allowed === undefined) {
      allowed = this.rules.mayPublish(subject);
      if (this.publishCache.size >= MAX_CACHED) this.publishCache.clear();
      this.publishCache.set(subject, allowed);
    }
    return allowed || this.useResponse(subject);
  }

  maySubscribe(subject: string): SubscribeDecision {
    return this.rules.maySubscribe(subject);
  }

  /** Checked on each delivery to a subscription that overlaps a deny pattern. */
  mayReceive(subject: string): boolean {
    let allowed = this.receiveCache.get(subject);
    if (allowed === undefined) {
      allowed = this.rules.mayReceive(subject);
      if (this.receiveCache.size >= MAX_CACHED) this.receiveCache.clear();
      this.receiveCache.set(subject, allowed);
    }
    return allowed;
  }

  /** True when deliveries must report their reply subjects (see requestReceived). */
  get tracksResponses(): boolean {
    return this.pending !== undefined;
  }

  /** A message with a reply subject was delivered to this connection: it may answer it. */
  requestReceived(reply: string, nowMs = Date.now()): void {
    const pending = this.pending;
    const responses = this.rules.responses;
    if (pending === undefined || responses === undefined) return;
    if (pending.size >= MAX_PENDING_RESPONSES && !pending.has(reply)) {
      for (const [subject, entry] of pending) {
        if (entry.untilMs !== 0 && entry.untilMs <= nowMs) pending.delete(subject);
      }
      if (pending.size >= MAX_PENDING_RESPONSES) {
        const oldest = pending.keys().next().value;
        if (oldest !== undefined) pending.delete(oldest);
      }
    }
    pending.set(reply, {
      left: responses.max,
      untilMs: responses.expiresMs === 0 ? 0 : nowMs + responses.expiresMs,
    });
  }

  private useResponse(subject: string): boolean {
    const entry = this.pending?.get(subject);
    if (entry === undefined) return false;
    if (entry.untilMs !== 0 && entry.untilMs <= Date.now()) {
      this.pending?.delete(subject);
      return false;
    }
    if (--entry.left <= 0) this.pending?.delete(subject);
    return true;
  }
}
