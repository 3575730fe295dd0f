// Measurement loops and percentiles. Latencies are in milliseconds (performance.now()).
import { performance } from "node:perf_hooks";

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/**
 * Calls `send()` `count` times keeping exactly `concurrency` requests outstanding (a fixed window:
 * each completion immediately starts the next one). Latency is per request, from send to reply.
 * Stops early (and says so) after `maxMs`.
 */
export async function measureSend(send, { count, concurrency, maxMs }) {
  const latencies = new Float64Array(count);
  let started = 0;
  let done = 0;
  let failure = null;
  const t0 = performance.now();
  const deadline = t0 + maxMs;

  async function lane() {
    while (failure === null && started < count && performance.now() < deadline) {
      started++;
      const s = performance.now();
      try {
        await send();
      } catch (err) {
        failure ??= err;
        return;
      }
      latencies[done++] = performance.now() - s;
    }
  }

  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const elapsedMs = performance.now() - t0;
  if (failure) throw failure;
  const sorted = latencies.subarray(0, done).sort();
  return {
    count: done,
    truncated: done < count,
    elapsedMs,
    rate: done / (elapsedMs / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

/** Calls `drainOnce()` (one FETCH + ACK round, returns how many messages it consumed) until it returns 0. */
export async function measureDrain(drainOnce, { maxMs }) {
  let count = 0;
  let batches = 0;
  let truncated = false;
  const t0 = performance.now();
  for (;;) {
    const n = await drainOnce();
    if (n === 0) break;
    count += n;
    batches++;
    if (performance.now() - t0 > maxMs) {
      truncated = true;
      break;
    }
  }
  const elapsedMs = performance.now() - t0;
  return { count, batches, truncated, elapsedMs, rate: count / (elapsedMs / 1000) };
}
