import type { AppendedRow, SpanLocation } from "./appended-rows.js";

/**
 * Numbers per packed row: mbox, msg_id, priority, created_ms, expires_ms (NaN: none), seg, seg_at,
 * seg_len, and until when its idempotency key is remembered (NaN: no key; the key itself is in `keys`).
 */
export const PACKED_FIELDS = 9;

/** Rows a fresh PendingRows has room for before it grows. */
const INITIAL_ROWS = 4096;

/** Plain rows (see packRows) in a hand-over up to this many are copied out; more hand over the buffer. */
const COPY_ROWS = 64;

/**
 * Plain rows and the others of a batch; the plain ones as PACKED_FIELDS numbers each, and the
 * idempotency keys of those that have one, in their order.
 */
export interface PackedRows {
  packed: Float64Array;
  keys: string[];
  others: AppendedRow[];
}

/**
 * Splits rows into the plain ones (no compaction key, due now, in the log, without tags), packed
 * as numbers that cross to a worker thread without being copied, and the others, in order.
 */
export function packRows(rows: readonly AppendedRow[]): PackedRows {
  let plain = 0;
  for (const row of rows) if (isPackable(row)) plain++;
  const packed = new Float64Array(plain * PACKED_FIELDS);
  const keys: string[] = [];
  const others: AppendedRow[] = [];
  let at = 0;
  for (const row of rows) {
    if (isPackable(row)) {
      packRow(packed, at, row, keys);
      at += PACKED_FIELDS;
    } else others.push(row);
  }
  return { packed, keys, others };
}

/**
 * The rows of logged SENDs waiting to be handed to the worker, packed as they arrive: a row
 * object kept until the hand-over (25 ms) outlived a young-generation GC and was copied, so
 * SEND's garbage cost more than its allocation. Only the rare other rows wait as objects.
 */
export class PendingRows {
  private packed = new Float64Array(INITIAL_ROWS * PACKED_FIELDS);
  private plain = 0;
  private keys: string[] = [];
  private others: AppendedRow[] = [];

  /** Rows waiting. */
  get size(): number {
    return this.plain + this.others.length;
  }

  add(rows: readonly AppendedRow[]): void {
    for (const row of rows) {
      if (!isPackable(row)) {
        this.others.push(row);
        continue;
      }
      const at = this.plain * PACKED_FIELDS;
      if (at === this.packed.length) this.grow();
      packRow(this.packed, at, row, this.keys);
      this.plain++;
    }
  }

  /** What waits, as views valid until the next add() or take(). */
  peek(): PackedRows {
    return {
      packed: this.packed.subarray(0, this.plain * PACKED_FIELDS),
      keys: this.keys,
      others: this.others,
    };
  }

  /** Empties it, handing over what waited: `packed` has a buffer of its own, free to transfer. */
  take(): PackedRows {
    const used = this.plain * PACKED_FIELDS;
    let packed: Float64Array;
    if (this.plain <= COPY_ROWS) {
      packed = this.packed.slice(0, used);
    } else {
      packed = this.packed.subarray(0, used);
      this.packed = new Float64Array(this.packed.length);
    }
    const taken = { packed, keys: this.keys, others: this.others };
    this.plain = 0;
    this.keys = [];
    this.others = [];
    return taken;
  }

  /** Puts rows handed over and given back (not written) before those that wait. */
  putBack({ packed, keys, others }: PackedRows): void {
    const plain = packed.length / PACKED_FIELDS;
    let buffer = this.packed;
    if ((this.plain + plain) * PACKED_FIELDS > buffer.length) {
      buffer = new Float64Array(Math.max(buffer.length * 2, (this.plain + plain) * PACKED_FIELDS));
    }
    buffer.copyWithin(plain * PACKED_FIELDS, 0, this.plain * PACKED_FIELDS);
    if (buffer !== this.packed)
      buffer.set(this.packed.subarray(0, this.plain * PACKED_FIELDS), plain * PACKED_FIELDS);
    buffer.set(packed, 0);
    this.packed = buffer;
    this.plain += plain;
    this.keys = [...keys, ...this.keys];
    this.others = [...others, ...this.others];
  }

  /** Forgets what waited (written elsewhere). */
  clear(): void {
    this.plain = 0;
    this.keys = [];
    this.others = [];
  }

  private grow(): void {
    const bigger = new Float64Array(this.packed.length * 2);
    bigger.set(this.packed);
    this.packed = bigger;
  }
}

function packRow(into: Float64Array, at: number, row: AppendedRow, keys: string[]): void {
  const located = row.located as SpanLocation;
  into[at] = row.mbox;
  into[at + 1] = row.id;
  into[at + 2] = row.priority;
  into[at + 3] = row.createdMs;
  into[at + 4] = row.expiresMs ?? Number.NaN;
  into[at + 5] = located.segment;
  into[at + 6] = located.offset;
  into[at + 7] = located.length;
  into[at + 8] = row.dedup?.untilMs ?? Number.NaN;
  if (row.dedup !== undefined) keys.push(row.dedup.key);
}

function isPackable(row: AppendedRow): boolean {
  return row.key === null && row.dueMs === null && row.tags === null && row.located !== undefined;
}
