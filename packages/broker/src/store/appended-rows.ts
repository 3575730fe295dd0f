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
}

const FIXED = 8 + 4 + 1 + 8 + 8 + 8;
const NULL_LENGTH = 0xffffffff;

/** Encoded rows, with views of each row's payload and header inside `bytes`. */
export interface EncodedRows {
  bytes: Buffer;
  payloads: Buffer[];
  headers: (Buffer | null)[];
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
    headers.push(bytes(r.header));
    payloads.push(bytes(r.payload) as Buffer);
  });
  return { bytes: out, payloads, headers };
}

export function decodeAppendedRows(body: Buffer): AppendedRow[] {
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
  const rows: AppendedRow[] = [];
  for (let i = 0; i < count; i++) {
    const id = number(body.readDoubleLE, 8);
    const mbox = number(body.readUInt32LE, 4);
    const priority = number(body.readUInt8, 1);
    const createdMs = number(body.readDoubleLE, 8);
    const expiresMs = orNull(number(body.readDoubleLE, 8));
    const dueMs = orNull(number(body.readDoubleLE, 8));
    const key = bytes()?.toString() ?? null;
    const tags = bytes()?.toString() ?? null;
    const header = bytes();
    const payload = bytes() ?? Buffer.alloc(0);
    rows.push({ id, mbox, priority, key, tags, header, payload, createdMs, expiresMs, dueMs });
  }
  return rows;
}
