/** How a consumer retries FETCH and ACK while the connection is lost or the broker is slow. */
export interface RetryOptions {
  /** Consecutive failures before giving up (default 30, about two minutes with the defaults). */
  attempts?: number;
  /** First pause; it doubles on every failure (default 100). */
  initialDelayMs?: number;
  /** Longest pause (default 5 000). */
  maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 30, initialDelayMs: 100, maxDelayMs: 5_000 };

/** Exponential backoff with jitter, so that many consumers do not retry in lockstep. */
export function retryDelay(attempt: number, retry: Required<RetryOptions>): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Waits `ms`, or less when `signal` aborts or `wake` settles. Never rejects. */
export function pause(
  ms: number,
  options: { signal?: AbortSignal; wake?: Promise<unknown> } = {},
): Promise<void> {
  const { signal, wake } = options;
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    wake?.then(done, done);
  });
}
