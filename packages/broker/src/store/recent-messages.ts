import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import type { StoredMessage } from "./store.js";

/** Numbers kept per message: id, priority, created, expires (NaN: never), bytes' place, header length (NONE: no header), payload length. */
const FIELDS = 7;
const NONE = -1;
/** Entries the index starts with; it doubles as needed, up to what the byte budget allows. */
const INITIAL_ENTRIES = 1024;

/** Payload and header bytes plus a rough allowance for the row itself. */
const ROW_OVERHEAD = 128;

/**
 * The most recently stored messages, up to a byte budget, oldest dropped
 * first. A claim right after a SEND (a consumer keeping up) finds its
 * messages here instead of reading each row and its bytes back. Ids are never
 * reused and stored messages never change, so an entry of a message deleted
 * since is harmless: lookups start from ids the database still has.
 *
 * Numbers go into one typed-array ring and bytes are copied into one buffer
 * allocated up front, written round and round. Keeping the log records' own
 * memory instead held each record past two young-generation GCs: V8 then
 * counted its bytes as old-generation growth and marked the whole heap several
 * times a second (a fifth of SEND throughput). A message is made only when one
 * is read, with its own copy of the bytes, which later SENDs may overwrite here.
 */
export class RecentMessages {
  private entries = new Float64Array(INITIAL_ENTRIES * FIELDS);
  private capacity = INITIAL_ENTRIES;
  /** Ring position of the oldest kept message, and how many are kept. */
  private head = 0;
  private count = 0;
  private bytes = 0;
  private readonly buffer: Buffer;
  /**
   * Where the next bytes go, counted from the first byte ever written (and past the ends a
   * message did not fit before): an entry whose bytes start before `written - buffer.length`
   * was overwritten.
   */
  private written = 0;
  /** Keys and tags of kept messages that have either, by id. */
  private readonly strings = new Map<number, readonly [string | null, string | null]>();

  constructor(private readonly maxBytes: number) {
    this.buffer = Buffer.allocUnsafeSlow(Math.max(maxBytes, 0));
  }

  /** Keeps rows stored together, in id order. */
  keep(rows: readonly AppendedRow[]): void {
    if (this.maxBytes <= 0 || rows.length === 0) return;
    // Lookups search by id: an id not above the newest (a store reopened) starts afresh.
    if (this.count > 0 && rows[0].id <= this.newestId()) this.clear();
    for (const row of rows) {
      const headerLength = row.header?.length ?? 0;
      const length = headerLength + row.payload.length;
      // Too big to keep: it is read from the log, as a dropped one is.
      if (length + ROW_OVERHEAD > this.maxBytes) continue;
      const at = this.place(length);
      if (row.header) this.buffer.set(row.header, at % this.buffer.length);
      this.buffer.set(row.payload, (at % this.buffer.length) + headerLength);
      if (this.count === this.capacity) this.grow();
      const e = this.entries;
      const i = ((this.head + this.count) % this.capacity) * FIELDS;
      e[i] = row.id;
      e[i + 1] = row.priority;
      e[i + 2] = row.createdMs;
      e[i + 3] = row.expiresMs ?? Number.NaN;
      e[i + 4] = at;
      e[i + 5] = row.header ? headerLength : NONE;
      e[i + 6] = row.payload.length;
      this.count++;
      this.bytes += length + ROW_OVERHEAD;
      if (row.key !== null || row.tags !== null) this.strings.set(row.id, [row.key, row.tags]);
      while (this.bytes > this.maxBytes) this.dropOldest();
    }
  }

  /** Whether messages from `id` on may be kept here (none older than the oldest kept one is). */
  mayHoldFrom(id: number): boolean {
    return this.count > 0 && id >= this.entries[this.head * FIELDS];
  }

  get(id: number): StoredMessage | undefined {
    const i = this.find(id);
    if (i === undefined) return undefined;
    const e = this.entries;
    const at = e[i + 4] % this.buffer.length;
    const headerLength = e[i + 5];
    const payloadAt = at + Math.max(headerLength, 0);
    const [key, tags] = this.strings.get(id) ?? [null, null];
    const expiresMs = e[i + 3];
    return {
      id,
      priority: PRIORITIES[e[i + 1]],
      key: key ?? undefined,
      tags: tags === null ? undefined : (JSON.parse(tags) as string[]),
      header: headerLength === NONE ? undefined : Buffer.from(this.buffer.subarray(at, payloadAt)),
      payload: Buffer.from(this.buffer.subarray(payloadAt, payloadAt + e[i + 6])),
      createdMs: e[i + 2],
      expiresMs: Number.isNaN(expiresMs) ? undefined : expiresMs,
      deliveryCount: undefined,
    };
  }

  /**
   * Room for `length` bytes in one piece: the place they go (counted as `written` is), after
   * dropping the oldest messages whose bytes are there.
   */
  private place(length: number): number {
    const size = this.buffer.length;
    let at = this.written;
    // Bytes are kept in one piece: a message that would run past the end starts at the beginning.
    if ((at % size) + length > size) at += size - (at % size);
    this.written = at + length;
    while (this.count > 0 && this.entries[this.head * FIELDS + 4] < this.written - size) this.dropOldest();
    return at;
  }

  /** Where `id`'s numbers start in `entries`: a binary search, the ring being in id order. */
  private find(id: number): number | undefined {
    let low = 0;
    let high = this.count - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const i = ((this.head + mid) % this.capacity) * FIELDS;
      const here = this.entries[i];
      if (id < here) high = mid - 1;
      else if (id > here) low = mid + 1;
      else return i;
    }
    return undefined;
  }

  private newestId(): number {
    return this.entries[((this.head + this.count - 1) % this.capacity) * FIELDS];
  }

  private dropOldest(): void {
    const i = this.head * FIELDS;
    const e = this.entries;
    this.bytes -= Math.max(e[i + 5], 0) + e[i + 6] + ROW_OVERHEAD;
    if (this.strings.size > 0) this.strings.delete(e[i]);
    this.head = (this.head + 1) % this.capacity;
    this.count--;
  }

  private clear(): void {
    while (this.count > 0) this.dropOldest();
  }

  /** Twice the room, the kept messages moved to the start in order. */
  private grow(): void {
    const bigger = new Float64Array(this.capacity * 2 * FIELDS);
    for (let k = 0; k < this.count; k++) {
      const from = ((this.head + k) % this.capacity) * FIELDS;
      bigger.set(this.entries.subarray(from, from + FIELDS), k * FIELDS);
    }
    this.entries = bigger;
    this.capacity *= 2;
    this.head = 0;
  }
}
