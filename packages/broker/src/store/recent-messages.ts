import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import type { StoredMessage } from "./store.js";

/**
 * Messages of one SEND group, whose ids run from `firstId` without gaps: numbers in `fields`
 * (FIELDS per message) and bytes in `record`, so a kept group is a few objects, not several per
 * message that the GC would walk and copy.
 */
interface Batch {
  firstId: number;
  count: number;
  record: Buffer;
  fields: Float64Array;
  /** Keys and tags, when a message of the group has either. */
  strings?: (readonly [string | null, string | null])[];
  bytes: number;
}

const FIELDS = 7;
/** Stands in for a dropped batch until the array is cut (no lookup reaches it). */
const DROPPED: Batch = {
  firstId: 0,
  count: 0,
  record: Buffer.alloc(0),
  fields: new Float64Array(0),
  bytes: 0,
};
const NONE = -1;

/** Payload and header bytes plus a rough allowance for the row itself. */
const ROW_OVERHEAD = 128;

/**
 * The most recently stored messages, up to a byte budget, oldest dropped
 * first. A claim right after a SEND (a consumer keeping up) finds its
 * messages here instead of reading each row and its bytes back. Kept per
 * SEND group, as numbers and the group's record, not message by message: a
 * message object is made only when one is read. Ids are never reused
 * and stored messages never change, so an entry of a message deleted since
 * is harmless: lookups start from ids the database still has.
 */
export class RecentMessages {
  private batches: Batch[] = [];
  /** Index of the oldest batch still kept (dropped ones are cut off in bulk). */
  private oldest = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * Keeps rows stored together, in id order, whose payloads and headers are views of `record`
   * (bytes nobody overwrites: the group's record in the log).
   */
  keep(rows: readonly AppendedRow[], record: Buffer): void {
    if (this.maxBytes <= 0 || rows.length === 0) return;
    let start = 0;
    for (let i = 1; i <= rows.length; i++) {
      // A gap in the ids starts another batch, so that ids map to places by subtraction.
      if (i < rows.length && rows[i].id === rows[i - 1].id + 1) continue;
      this.keepBatch(rows, start, i, record);
      start = i;
    }
  }

  get(id: number): StoredMessage | undefined {
    const batch = this.batchOf(id);
    if (batch === undefined) return undefined;
    const i = id - batch.firstId;
    const f = batch.fields;
    const at = i * FIELDS;
    const [key, tags] = batch.strings?.[i] ?? [null, null];
    const expiresMs = f[at + 2];
    return {
      id,
      priority: PRIORITIES[f[at]],
      key: key ?? undefined,
      tags: tags === null ? undefined : (JSON.parse(tags) as string[]),
      header: f[at + 3] === NONE ? undefined : batch.record.subarray(f[at + 3], f[at + 3] + f[at + 4]),
      payload: batch.record.subarray(f[at + 5], f[at + 5] + f[at + 6]),
      createdMs: f[at + 1],
      expiresMs: Number.isNaN(expiresMs) ? undefined : expiresMs,
    };
  }

  private keepBatch(rows: readonly AppendedRow[], from: number, to: number, record: Buffer): void {
    const count = to - from;
    const fields = new Float64Array(count * FIELDS);
    let strings: Batch["strings"];
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      const row = rows[from + i];
      const at = i * FIELDS;
      fields[at] = row.priority;
      fields[at + 1] = row.createdMs;
      fields[at + 2] = row.expiresMs ?? Number.NaN;
      fields[at + 3] = row.header ? row.header.byteOffset - record.byteOffset : NONE;
      fields[at + 4] = row.header?.length ?? 0;
      fields[at + 5] = row.payload.byteOffset - record.byteOffset;
      fields[at + 6] = row.payload.length;
      if (row.key !== null || row.tags !== null) {
        strings ??= Array.from({ length: count }, () => [null, null] as const);
        strings[i] = [row.key, row.tags];
      }
      bytes += row.payload.length + (row.header?.length ?? 0) + ROW_OVERHEAD;
    }
    this.batches.push({ firstId: rows[from].id, count, record, fields, strings, bytes });
    this.bytes += bytes;
    while (this.bytes > this.maxBytes && this.oldest < this.batches.length) {
      this.bytes -= this.batches[this.oldest].bytes;
      // Let go of the record now, not when the array is next cut: a record kept past a few
      // young-generation collections is promoted, and the old generation then has to be marked.
      this.batches[this.oldest++] = DROPPED;
    }
    if (this.oldest > 1024 && this.oldest * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.oldest);
      this.oldest = 0;
    }
  }

  /** The kept batch holding `id`: a binary search, batches being in id order. */
  private batchOf(id: number): Batch | undefined {
    let low = this.oldest;
    let high = this.batches.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const batch = this.batches[mid];
      if (id < batch.firstId) high = mid - 1;
      else if (id >= batch.firstId + batch.count) low = mid + 1;
      else return batch;
    }
    return undefined;
  }
}
