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
  /** The SEND's idempotency key and until when it is remembered (see NewMessage.dedup). */
  dedup?: { key: string; untilMs: number };
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
/**
 * Set in a row's priority byte when the row carries an idempotency key: its length-prefixed bytes
 * and the float64 end of its window follow the tags. Records of rows without one read as before.
 */
const HAS_DEDUP = 0x80;

/** Encoded rows, with views of each row's payload and header inside `bytes`. */
export interface EncodedRows {
  bytes: Buffer;
  payloads: Buffer[];
  headers: (Buffer | null)[];
  /** Per row, where its header-and-payload span starts in `bytes`. */
  spans: number[];
}

/** Where a record's bytes come from: `size` bytes, all of which the encoder overwrites. */
export type RecordAllocator = (size: number) => Buffer;

/**
 * One journal record body for the rows of one commit group (binary: no JSON, no base64), after
 * `headroom` bytes left free for the record's own header, so the journal writes it without a copy.
 * One pass with a DataView: SEND's hottest encoding, where Buffer's per-call helpers showed.
 */
export function encodeAppendedRows(
  rows: readonly AppendedRow[],
  headroom = 0,
  allocate: RecordAllocator = Buffer.allocUnsafe,
): EncodedRows {
  const n = rows.length;
  // Keys and tags are rare: their bytes are made only for the rows that have them.
  let keys: (Buffer | null)[] | undefined;
  let tags: (Buffer | null)[] | undefined;
  let dedups: (Buffer | null)[] | undefined;
  let size = headroom + 4 + n * (FIXED + 16);
  for (let i = 0; i < n; i++) {
    const row = rows[i];
    if (row.key !== null) {
      const key = Buffer.from(row.key);
      keys ??= new Array<Buffer | null>(n).fill(null);
      keys[i] = key;
      size += key.length;
    }
    if (row.tags !== null) {
      const tag = Buffer.from(row.tags);
      tags ??= new Array<Buffer | null>(n).fill(null);
      tags[i] = tag;
      size += tag.length;
    }
    if (row.dedup !== undefined) {
      const dedup = Buffer.from(row.dedup.key);
      dedups ??= new Array<Buffer | null>(n).fill(null);
      dedups[i] = dedup;
      size += 4 + dedup.length + 8;
    }
    size += (row.header?.length ?? 0) + row.payload.length;
  }
  const out = allocate(size);
  const view = new DataView(out.buffer, out.byteOffset, size);
  const payloads = new Array<Buffer>(n);
  const headers = new Array<Buffer | null>(n);
  const spans = new Array<number>(n);
  view.setUint32(headroom, n, true);
  let at = headroom + 4;
  // Writes a length-prefixed value (or the null marker) and returns the view of its bytes.
  const bytes = (value: Uint8Array | null): Buffer | null => {
    if (value === null) {
      view.setUint32(at, NULL_LENGTH, true);
      at += 4;
      return null;
    }
    view.setUint32(at, value.length, true);
    const from = at + 4;
    out.set(value, from);
    at = from + value.length;
    return out.subarray(from, at);
  };
  for (let i = 0; i < n; i++) {
    const row = rows[i];
    view.setFloat64(at, row.id, true);
    view.setUint32(at + 8, row.mbox, true);
    view.setUint8(at + 12, row.dedup === undefined ? row.priority : row.priority | HAS_DEDUP);
    view.setFloat64(at + 13, row.createdMs, true);
    view.setFloat64(at + 21, row.expiresMs ?? Number.NaN, true);
    view.setFloat64(at + 29, row.dueMs ?? Number.NaN, true);
    at += FIXED;
    bytes(keys === undefined ? null : keys[i]);
    bytes(tags === undefined ? null : tags[i]);
    if (row.dedup !== undefined && dedups !== undefined) {
      bytes(dedups[i]);
      view.setFloat64(at, row.dedup.untilMs, true);
      at += 8;
    }
    spans[i] = at;
    headers[i] = bytes(row.header);
    payloads[i] = bytes(row.payload) as Buffer;
  }
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
    const flagged = number(body.readUInt8, 1);
    const priority = flagged & ~HAS_DEDUP;
    const createdMs = number(body.readDoubleLE, 8);
    const expiresMs = orNull(number(body.readDoubleLE, 8));
    const dueMs = orNull(number(body.readDoubleLE, 8));
    const key = bytes()?.toString() ?? null;
    const tags = bytes()?.toString() ?? null;
    let dedup: AppendedRow["dedup"];
    if (flagged & HAS_DEDUP) {
      const dedupKey = bytes()?.toString() ?? "";
      dedup = { key: dedupKey, untilMs: number(body.readDoubleLE, 8) };
    }
    const spanAt = at;
    const header = bytes();
    const payload = bytes() ?? Buffer.alloc(0);
    const row = { id, mbox, priority, key, tags, header, payload, createdMs, expiresMs, dueMs, spanAt };
    rows.push(dedup === undefined ? row : { ...row, dedup });
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
