const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const pattern = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;

/** Parses "500ms", "30s", "2m", "1h" or a number of seconds into milliseconds; undefined when malformed. */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === "number")
    return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  if (typeof value !== "string") return undefined;
  const match = pattern.exec(value.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * units[match[2]]);
}
