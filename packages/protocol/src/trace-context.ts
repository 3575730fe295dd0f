/**
 * W3C trace context (https://www.w3.org/TR/trace-context/) as mailboxes carry it: the
 * `traceparent` header of a SEND names the span that sent the message.
 */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/** Reads a `traceparent` value; undefined when it is not one (a bad header is ignored, as the spec says). */
export function parseTraceparent(value: string | undefined): TraceParent | undefined {
  if (value === undefined) return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  // Version ff is forbidden; version 00 has nothing after the flags.
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** Writes a version-00 `traceparent` value. */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${parent.sampled ? "01" : "00"}`;
}

/** Whether `id` can be a W3C trace id: 32 lowercase hex digits, not all zero. */
export function isTraceId(id: string): boolean {
  return /^[0-9a-f]{32}$/.test(id) && !ALL_ZERO.test(id);
}
