/** A message row as SEND writes it: into `messages` under `id`, or into `delayed` when `dueMs` is set. */
export interface AppendedRow {
  id: number;
  mbox: number;
  priority: number;
  key: string | null;
  tags: string | null;
  header: Uint8Array | null;
  payload: Uint8Array;
  createdMs: number;
  expiresMs: number | null;
  dueMs: number | null;
  /** Where the header and payload sit in the message log, once the row's record is written there. */
  located?: SpanLocation;
}

/**
 * A row's header and payload in the message log: `length` bytes from `offset` of segment
 * `segment`, the header's length and bytes followed by the payload's (see splitSpan).
 */
export interface SpanLocation {
  segment: number;
  offset: number;
  length: number;
}

const FIXED = 8 + 4 + 1 + 8 + 8 + 8;
const NULL_LENGTH = 0xffffffff;

/** Encoded rows, with views of each row's payload and header inside `bytes`. */
export interface EncodedRows {
  bytes: Buffer;
  payloads: Buffer[];
  headers: (Buffer | null)[];
  /** Per row, where its header-and-payload span starts in `bytes`. */
  spans: number[];
}

/**
 * One journal record body for the rows of one commit group (binary: no JSON, no base64), after
 * `headroom` bytes left free for the record's own header, so the journal writes it without a copy.
 */
export function encodeAppendedRows(rows: readonly AppendedRow[], headroom = 0): EncodedRows {
  const keys = rows.map((r) => (r.key === null ? null : Buffer.from(r.key)));
  const tags = rows.map((r) => (r.tags === null ? null : Buffer.from(r.tags)));
  let size = headroom + 4;
  rows.forEach((r, i) => {
    size += FIXED + 16 + (keys[i]?.length ?? 0) + (tags[i]?.length ?? 0);
    size += (r.header?.length ?? 0) + r.payload.length;
  });
  const out = Buffer.allocUnsafe(size);
  let at = out.writeUInt32LE(rows.length, headroom);
  const payloads: Buffer[] = [];
  const headers: (Buffer | null)[] = [];
  const spans: number[] = [];
  const bytes = (value: Uint8Array | null): Buffer | null => {
    at = out.writeUInt32LE(value === null ? NULL_LENGTH : value.length, at);
    if (value === null) return null;
    out.set(value, at);
    at += value.length;
    return out.subarray(at - value.length, at);
  };
  rows.forEach((r, i) => {
    at = out.writeDoubleLE(r.id, at);
    at = out.writeUInt32LE(r.mbox, at);
    at = out.writeUInt8(r.priority, at);
    at = out.writeDoubleLE(r.createdMs, at);
    at = out.writeDoubleLE(r.expiresMs ?? Number.NaN, at);
    at = out.writeDoubleLE(r.dueMs ?? Number.NaN, at);
    bytes(keys[i]);
    bytes(tags[i]);
    spans.push(at);
    headers.push(bytes(r.header));
    payloads.push(bytes(r.payload) as Buffer);
  });
  return { bytes: out, payloads, headers, spans };
}

/** Rows of a record body, each with `spanAt`: where its header-and-payload span starts in `body`. */
export function decodeAppendedRows(body: Buffer): (AppendedRow & { spanAt: number })[] {
  let at = 0;
  const number = (read: (offset: number) => number, width: number) => {
    const value = read.call(body, at);
    at += width;
    return value;
  };
  const orNull = (value: number) => (Number.isNaN(value) ? null : value);
  const bytes = (): Buffer | null => {
    const length = number(body.readUInt32LE, 4);
    if (length === NULL_LENGTH) return null;
    const value = body.subarray(at, at + length);
    at += length;
    return value;
  };
  const count = number(body.readUInt32LE, 4);
  const rows: (AppendedRow & { spanAt: number })[] = [];
  for (let i = 0; i < count; i++) {
    const id = number(body.readDoubleLE, 8);
    const mbox = number(body.readUInt32LE, 4);
    const priority = number(body.readUInt8, 1);
    const createdMs = number(body.readDoubleLE, 8);
    const expiresMs = orNull(number(body.readDoubleLE, 8));
    const dueMs = orNull(number(body.readDoubleLE, 8));
    const key = bytes()?.toString() ?? null;
    const tags = bytes()?.toString() ?? null;
    const spanAt = at;
    const header = bytes();
    const payload = bytes() ?? Buffer.alloc(0);
    rows.push({ id, mbox, priority, key, tags, header, payload, createdMs, expiresMs, dueMs, spanAt });
  }
  return rows;
}

/** Bytes of a row's span: the header's length and bytes, then the payload's (what splitSpan reads). */
export function spanLength(row: { header: Uint8Array | null; payload: Uint8Array }): number {
  return 4 + (row.header?.length ?? 0) + 4 + row.payload.length;
}

/** The header (null when the message had none) and payload of a span read from the message log. */
export function splitSpan(span: Buffer): { header: Buffer | null; payload: Buffer } {
  const headerLength = span.readUInt32LE(0);
  let at = 4;
  let header: Buffer | null = null;
  if (headerLength !== NULL_LENGTH) {
    header = span.subarray(4, 4 + headerLength);
    at += headerLength;
  }
  const payloadLength = span.readUInt32LE(at);
  return { header, payload: span.subarray(at + 4, at + 4 + payloadLength) };
}
