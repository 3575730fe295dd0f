/** Small formatting helpers for figures and times. */

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function rate(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toFixed(1);
}

/** "3 s", "5 min", "2 h", "4 d" since a unix-ms time. */
export function age(sinceMs: number, nowMs = Date.now()): string {
  const s = Math.max(0, Math.round((nowMs - sinceMs) / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60000)} min`;
}

export function time(ms: number): string {
  return new Date(ms).toLocaleTimeString();
}

export function ttl(seconds: number): string {
  return seconds === 0 ? "never" : `${seconds} s`;
}
