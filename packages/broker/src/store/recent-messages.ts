import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import type { StoredMessage } from "./store.js";

/** Numbers kept per message: id, priority, created, expires (NaN: never), memory slot, header at/length, payload at/length. */
const FIELDS = 9;
const NONE = -1;
/** Entries the ring starts with; it doubles as needed, up to what the byte budget allows. */
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
 * Kept as numbers in one ring of a typed array, and the bytes as places in the
 * memory of the log records they were written in (a few 1 MiB slabs): keeping
 * an object per SEND group made each group outlive a young-generation GC, and
 * marking the old generation they filled took the broker's CPU every second.
 * A message object is made only when one is read.
 */
export class RecentMessages {
  private entries = new Float64Array(INITIAL_ENTRIES * FIELDS);
  private capacity = INITIAL_ENTRIES;
  /** Ring position of the oldest kept message, and how many are kept. */
  private head = 0;
  private count = 0;
  private bytes = 0;
  /** The memory kept messages' bytes are in, by slot, with how many kept messages use each slot. */
  private readonly memory: (ArrayBufferLike | undefined)[] = [];
  private readonly uses: number[] = [];
  private readonly slotOf = new Map<ArrayBufferLike, number>();
  private readonly freeSlots: number[] = [];
  /** Keys and tags of kept messages that have either, by id. */
  private readonly strings = new Map<number, readonly [string | null, string | null]>();

  constructor(private readonly maxBytes: number) {}

  /**
   * Keeps rows stored together, in id order, whose payloads and headers are views of `record`
   * (bytes nobody overwrites: the group's record in the log).
   */
  keep(rows: readonly AppendedRow[], record: Buffer): void {
    if (this.maxBytes <= 0 || rows.length === 0) return;
    // Lookups search by id: an id not above the newest (a store reopened) starts afresh.
    if (this.count > 0 && rows[0].id <= this.newestId()) this.clear();
    const slot = this.slotFor(record.buffer);
    for (const row of rows) {
      if (this.count === this.capacity) this.grow();
      const at = ((this.head + this.count) % this.capacity) * FIELDS;
      const e = this.entries;
      e[at] = row.id;
      e[at + 1] = row.priority;
      e[at + 2] = row.createdMs;
      e[at + 3] = row.expiresMs ?? Number.NaN;
      e[at + 4] = slot;
      e[at + 5] = row.header ? row.header.byteOffset : NONE;
      e[at + 6] = row.header?.length ?? 0;
      e[at + 7] = row.payload.byteOffset;
      e[at + 8] = row.payload.length;
      this.count++;
      this.uses[slot]++;
      this.bytes += row.payload.length + (row.header?.length ?? 0) + ROW_OVERHEAD;
      if (row.key !== null || row.tags !== null) this.strings.set(row.id, [row.key, row.tags]);
    }
    while (this.bytes > this.maxBytes && this.count > 0) this.dropOldest();
  }

  get(id: number): StoredMessage | undefined {
    const at = this.find(id);
    if (at === undefined) return undefined;
    const e = this.entries;
    const memory = this.memory[e[at + 4]] as ArrayBufferLike;
    const [key, tags] = this.strings.get(id) ?? [null, null];
    const expiresMs = e[at + 3];
    return {
      id,
      priority: PRIORITIES[e[at + 1]],
      key: key ?? undefined,
      tags: tags === null ? undefined : (JSON.parse(tags) as string[]),
      header: e[at + 5] === NONE ? undefined : Buffer.from(memory, e[at + 5], e[at + 6]),
      payload: Buffer.from(memory, e[at + 7], e[at + 8]),
      createdMs: e[at + 2],
      expiresMs: Number.isNaN(expiresMs) ? undefined : expiresMs,
    };
  }

  /** Where `id`'s numbers start in `entries`: a binary search, the ring being in id order. */
  private find(id: number): number | undefined {
    let low = 0;
    let high = this.count - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const at = ((this.head + mid) % this.capacity) * FIELDS;
      const here = this.entries[at];
      if (id < here) high = mid - 1;
      else if (id > here) low = mid + 1;
      else return at;
    }
    return undefined;
  }

  private newestId(): number {
    return this.entries[((this.head + this.count - 1) % this.capacity) * FIELDS];
  }

  private dropOldest(): void {
    const at = this.head * FIELDS;
    const e = this.entries;
    this.bytes -= e[at + 8] + e[at + 6] + ROW_OVERHEAD;
    if (this.strings.size > 0) this.strings.delete(e[at]);
    this.release(e[at + 4]);
    this.head = (this.head + 1) % this.capacity;
    this.count--;
  }

  private clear(): void {
    while (this.count > 0) this.dropOldest();
  }

  private slotFor(memory: ArrayBufferLike): number {
    let slot = this.slotOf.get(memory);
    if (slot === undefined) {
      slot = this.freeSlots.pop() ?? this.memory.length;
      this.memory[slot] = memory;
      this.uses[slot] = 0;
      this.slotOf.set(memory, slot);
    }
    return slot;
  }

  /** One kept message less in a slot; a slot none uses lets go of its memory. */
  private release(slot: number): void {
    if (--this.uses[slot] > 0) return;
    this.slotOf.delete(this.memory[slot] as ArrayBufferLike);
    this.memory[slot] = undefined;
    this.freeSlots.push(slot);
  }

  /** Twice the room, the kept messages moved to the start in order. */
  private grow(): void {
    const bigger = new Float64Array(this.capacity * 2 * FIELDS);
    for (let i = 0; i < this.count; i++) {
      const from = ((this.head + i) % this.capacity) * FIELDS;
      bigger.set(this.entries.subarray(from, from + FIELDS), i * FIELDS);
    }
    this.entries = bigger;
    this.capacity *= 2;
    this.head = 0;
  }
}
