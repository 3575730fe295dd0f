import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { namedStderrLogger } from "@mq9/agent";
import { WEBHOOK_EVENTS, type WebhookEvent } from "../defaults.js";

export { WEBHOOK_EVENTS, type WebhookEvent };

export interface WebhookConfig {
  url: string;
  /** Events sent to this URL (default all). */
  events?: WebhookEvent[];
  /** Shared secret: each body is signed with HMAC-SHA256 in `x-mq9-signature: sha256=<hex>`. */
  secret?: string;
  /** Deliveries tried before giving up (default 6). */
  maxAttempts?: number;
  /** First pause between attempts, doubled each time up to 30 s (default 500). */
  backoffMs?: number;
  /** Time one attempt may take (default 10 000). */
  timeoutMs?: number;
}

export const SIGNATURE_HEADER = "x-mq9-signature";

/** The signature header value of a body: `sha256=` and the hex HMAC-SHA256 under the secret. */
export function signWebhookBody(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Checks a received body against its signature header, in constant time. */
export function verifyWebhookSignature(body: string, secret: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signWebhookBody(body, secret));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Status codes worth trying again; other 4xx mean the request itself is refused. */
const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

const MAX_IN_FLIGHT = 1_000;

/**
 * Sends events to the configured webhooks in the background: `notify` only queues,
 * so the scheduler never waits for a slow or dead endpoint. Failed deliveries are
 * retried with exponential backoff.
 */
export class WebhookNotifier {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private deliveredCount = 0;
  private failedCount = 0;

  constructor(
    private readonly hooks: readonly WebhookConfig[],
    private readonly onError: (error: Error) => void = (e) =>
      namedStderrLogger("mq9 orchestrator webhook").warn(e.message),
  ) {
    for (const hook of hooks) {
      try {
        new URL(hook.url);
      } catch {
        throw new Error(`webhook url '${hook.url}' is not a valid URL`);
      }
      for (const event of hook.events ?? []) {
        if (!WEBHOOK_EVENTS.includes(event)) {
          throw new Error(`webhook event '${event}' is unknown; use ${WEBHOOK_EVENTS.join(", ")}`);
        }
      }
    }
  }

  /** Deliveries that succeeded and that were given up on. */
  get stats(): { delivered: number; failed: number } {
    return { delivered: this.deliveredCount, failed: this.failedCount };
  }

  /** Queues an event for every webhook that wants it; returns at once. */
  notify(event: WebhookEvent, data: unknown): void {
    for (const hook of this.hooks) {
      if (hook.events && !hook.events.includes(event)) continue;
      if (this.inFlight.size >= MAX_IN_FLIGHT) {
        this.failedCount++;
        this.onError(new Error(`${event} for ${hook.url} dropped: ${MAX_IN_FLIGHT} deliveries are pending`));
        continue;
      }
      const body = JSON.stringify({ event, delivery_id: randomUUID(), at: Date.now(), data });
      const delivery = this.deliver(hook, event, body).finally(() => this.inFlight.delete(delivery));
      this.inFlight.add(delivery);
    }
  }

  /** Resolves when nothing is being delivered (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /** Gives pending deliveries `graceMs` to finish, then stops retrying. */
  async close(graceMs = 2_000): Promise<void> {
    const grace = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([this.idle(), grace]);
    this.abort.abort();
    await this.idle();
  }

  private async deliver(hook: WebhookConfig, event: WebhookEvent, body: string): Promise<void> {
    const attempts = hook.maxAttempts ?? 6;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "mq9-orchestrator",
      "x-mq9-event": event,
    };
    if (hook.secret) headers[SIGNATURE_HEADER] = signWebhookBody(body, hook.secret);
    let problem = "";
    for (let attempt = 1; attempt <= attempts && !this.abort.signal.aborted; attempt++) {
      try {
        const response = await fetch(hook.url, {
          method: "POST",
          headers: { ...headers, "x-mq9-attempt": String(attempt) },
          body,
          signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(hook.timeoutMs ?? 10_000)]),
        });
        await response.arrayBuffer().catch(() => undefined);
        if (response.ok) {
          this.deliveredCount++;
          return;
        }
        problem = `HTTP ${response.status}`;
        if (!retryable(response.status)) break;
      } catch (err) {
        problem = (err as Error).message;
      }
      if (attempt < attempts) {
        const pause = Math.min(30_000, (hook.backoffMs ?? 500) * 2 ** (attempt - 1));
        await sleep(pause, undefined, { signal: this.abort.signal }).catch(() => undefined);
      }
    }
    this.failedCount++;
    this.onError(new Error(`${event} for ${hook.url} not delivered: ${problem}`));
  }
}
