import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import { KeptClasses } from "./kept-classes.js";
import type { StoredMessage } from "./store.js";

/**
 * Numbers kept per message: id, priority, created, expires (NaN: never), bytes' place, header
 * length (NONE: no header), payload length, mailbox id, deleted (1) or not (0).
 */
const FIELDS = 9;
const NONE = -1;
/** Entries the index starts with; it doubles as needed, up to what the byte budget allows. */
const INITIAL_ENTRIES = 1024;

/** Payload and header bytes plus a rough allowance for the row itself. */
const ROW_OVERHEAD = 128;

/**
 * The most recently stored messages, up to a byte budget, oldest dropped
 * first. A claim right after a SEND (a consumer keeping up) finds its
 * messages here instead of reading each row and its bytes back, and a class
 * read finds which messages there are (see KeptClasses) without asking SQLite:
 * the store tells this cache of every message it deletes, so what it lists is
 * exactly what the database holds from each class's floor on.
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
  /** Which kept messages each mailbox's classes hold. */
  private readonly classes = new KeptClasses();
  /**
   * Every message stored from this id on is kept or known to the class index (Infinity until
   * the first is kept): below it, messages were dropped or stored before this cache began.
   */
  private coveredFrom = Number.POSITIVE_INFINITY;

  constructor(private readonly maxBytes: number) {
    this.buffer = Buffer.allocUnsafeSlow(Math.max(maxBytes, 0));
  }

  /** Keeps rows stored together, in id order. */
  keep(rows: readonly AppendedRow[]): void {
    if (this.maxBytes <= 0 || rows.length === 0) return;
    // Lookups search by id: an id not above the newest (a store reopened) starts afresh, and
    // trusts no class read below the ids it has seen, whose messages it no longer lists.
    if (this.count > 0 && rows[0].id <= this.newestId()) {
      const newest = this.newestId();
      this.clear();
      this.coveredFrom = newest + 1;
    }
    if (this.coveredFrom === Number.POSITIVE_INFINITY) this.coveredFrom = rows[0].id;
    for (const row of rows) {
      // As the row writer does: the message stored with the key before is gone.
      if (row.key !== null) {
        const replaced = this.classes.replaceKey(row.mbox, row.key, row.id);
        if (replaced !== undefined) this.delete(replaced);
      }
      const headerLength = row.header?.length ?? 0;
      const length = headerLength + row.payload.length;
      // Too big to keep: it is read from the log, as a dropped one is.
      if (length + ROW_OVERHEAD > this.maxBytes) {
        this.classes.notKept(row.mbox, row.priority, row.id);
        continue;
      }
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
      e[i + 7] = row.mbox;
      e[i + 8] = 0;
      this.classes.add(row.mbox, row.priority, row.id);
      this.count++;
      this.bytes += length + ROW_OVERHEAD;
      if (row.key !== null || row.tags !== null) this.strings.set(row.id, [row.key, row.tags]);
      while (this.bytes > this.maxBytes) this.dropOldest();
    }
  }

  /** A message of the class stored but not kept (a delayed one that became due): reads below it ask the database. */
  notKept(mbox: number, rank: number, id: number): void {
    this.classes.notKept(mbox, rank, id);
  }

  /** A message was deleted from the database (call once its delete is committed). */
  delete(id: number): void {
    const i = this.find(id);
    if (i !== undefined) this.entries[i + 8] = 1;
  }

  /** Every message of the mailbox was deleted (the mailbox dropped or purged). */
  forgetMailbox(mbox: number): void {
    this.classes.forgetMailbox(mbox);
  }

  /**
   * The class's live messages from `fromId` on as the database would return them (see
   * MessageReads.classMessages); undefined when some of them may not be kept here.
   */
  classMessages(
    mbox: number,
    rank: number,
    fromId: number,
    nowMs: number,
    fromCreatedMs: number,
    limit: number,
  ): StoredMessage[] | undefined {
    if (fromId < this.coveredFrom) return undefined;
    const listed = this.classes.idsFrom(mbox, rank, fromId);
    if (!listed) return undefined;
    const { ids } = listed;
    const e = this.entries;
    const picked: number[] = [];
    for (let k = listed.at; k < ids.length && picked.length < limit; k++) {
      const i = this.find(ids[k]);
      // Listed but not here: not expected; the database answers.
      if (i === undefined) return undefined;
      if (e[i + 8] === 1 || e[i + 3] <= nowMs || e[i + 2] < fromCreatedMs) continue;
      picked.push(i);
    }
    return this.messagesAt(picked);
  }

  /**
   * The messages at `picked` (entry places, in id order). Their bytes usually lie back to back
   * in the buffer: then they are copied at once, and each message's bytes are a view of that
   * copy (which a message kept alive holds whole, as a pooled Buffer holds its pool).
   */
  private messagesAt(picked: readonly number[]): StoredMessage[] {
    const messages: StoredMessage[] = new Array(picked.length);
    if (picked.length === 0) return messages;
    const e = this.entries;
    const size = this.buffer.length;
    const start = e[picked[0] + 4] % size;
    let end = start;
    let own = 0;
    for (let k = 0; k < picked.length; k++) {
      const i = picked[k];
      const at = e[i + 4] % size;
      // Before the previous one's end: the buffer wrapped around in between.
      if (at < end) {
        end = -1;
        break;
      }
      const length = Math.max(e[i + 5], 0) + e[i + 6];
      own += length;
      end = at + length;
    }
    // Other mailboxes' messages in between would be copied too: only a little of them.
    if (end < 0 || picked.length === 1 || end - start > 2 * own + 4096) {
      for (let k = 0; k < picked.length; k++) messages[k] = this.messageAt(picked[k]);
      return messages;
    }
    const copy = Buffer.allocUnsafeSlow(end - start);
    this.buffer.copy(copy, 0, start, end);
    for (let k = 0; k < picked.length; k++) messages[k] = this.messageAt(picked[k], copy, start);
    return messages;
  }

  get(id: number): StoredMessage | undefined {
    const i = this.find(id);
    if (i === undefined || this.entries[i + 8] === 1) return undefined;
    return this.messageAt(i);
  }

  /** The message at entry place `i`, its bytes copied, or viewed in `copy` (the buffer's bytes from `copiedFrom` on). */
  private messageAt(i: number, copy?: Buffer, copiedFrom = 0): StoredMessage {
    const e = this.entries;
    const id = e[i];
    const at = e[i + 4] % this.buffer.length;
    const headerLength = e[i + 5];
    const payloadAt = at + Math.max(headerLength, 0);
    const payloadEnd = payloadAt + e[i + 6];
    const strings = this.strings.size > 0 ? this.strings.get(id) : undefined;
    const tags = strings?.[1] ?? null;
    const expiresMs = e[i + 3];
    return {
      id,
      priority: PRIORITIES[e[i + 1]],
      key: strings?.[0] ?? undefined,
      tags: tags === null ? undefined : (JSON.parse(tags) as string[]),
      header: headerLength === NONE ? undefined : this.bytesAt(at, payloadAt, copy, copiedFrom),
      payload: this.bytesAt(payloadAt, payloadEnd, copy, copiedFrom),
      createdMs: e[i + 2],
      expiresMs: Number.isNaN(expiresMs) ? undefined : expiresMs,
      deliveryCount: undefined,
    };
  }

  private bytesAt(start: number, end: number, copy: Buffer | undefined, copiedFrom: number): Buffer {
    if (copy) return copy.subarray(start - copiedFrom, end - copiedFrom);
    return Buffer.from(this.buffer.subarray(start, end));
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
    // Kept ids ascend through the ring: one older than the oldest kept (a consumer far behind,
    // reading from the log) is not here, and needs no search.
    if (this.count === 0 || id < this.entries[this.head * FIELDS] || id > this.newestId()) return undefined;
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
    const id = e[i];
    this.bytes -= Math.max(e[i + 5], 0) + e[i + 6] + ROW_OVERHEAD;
    const strings = this.strings.size > 0 ? this.strings.get(id) : undefined;
    if (strings) this.strings.delete(id);
    this.classes.dropOldest(e[i + 7], e[i + 1], id, strings?.[0] ?? null);
    if (id >= this.coveredFrom) this.coveredFrom = id + 1;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
  }

  private clear(): void {
    while (this.count > 0) this.dropOldest();
    this.classes.clear();
    this.coveredFrom = Number.POSITIVE_INFINITY;
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
