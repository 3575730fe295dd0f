import { crc32 } from "node:zlib";
import { RECORD_HEADER } from "./record-framing.js";

/** Reads `length` bytes at `offset` of one segment file (fewer at its end). */
export type SegmentReader = (offset: number, length: number) => Buffer;

/** Bytes read at a time while looking for the records of a segment. */
const SCAN_CHUNK = 1024 * 1024;
/** A record longer than this has the next record's header read alone (see walk). */
const LARGE_RECORD = 16 * 1024;

const UNCHECKED = 0;
const GOOD = 1;
const BAD = 2;

/** A record of the message log whose bytes do not match its checksum (or that cannot be found whole). */
export class CorruptRecordError extends Error {
  readonly code = "STORE_CORRUPT";
  constructor(
    readonly segment: number,
    /** Where the record starts in its segment file. */
    readonly at: number,
    reason: string,
  ) {
    super(`log segment ${segment} byte ${at}: ${reason}`);
    this.name = "CorruptRecordError";
  }
}

/** Where a record that checked out starts and ends in its segment: every span inside is good. */
export interface CheckedBytes {
  start: number;
  end: number;
}

/** What check() answers for a segment whose every record checked out. */
const WHOLE_SEGMENT: CheckedBytes = { start: 0, end: Number.POSITIVE_INFINITY };

/** What is known of one segment's records: where each starts and ends, and its check. */
class SegmentRecords {
  starts: number[] = [];
  ends: number[] = [];
  states: number[] = [];
  /** How far the file has been walked for records. */
  walked: number;
  unchecked = 0;

  constructor(fileHeader: number) {
    this.walked = fileHeader;
  }

  /** The index of the record holding [offset, offset + length), or -1. */
  find(offset: number, length: number): number {
    let low = 0;
    let high = this.starts.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (this.starts[mid] <= offset) low = mid + 1;
      else high = mid - 1;
    }
    const i = high;
    if (i < 0 || offset + length > this.ends[i]) return -1;
    return i;
  }
}

/**
 * Checks the CRC of each record of the message log the first time a message
 * in it is read (a record written or replayed this run is checked as well:
 * the disk may not hold what was written), and remembers the verdict. A read
 * from a record whose bytes do not match fails with CorruptRecordError instead
 * of returning wrong bytes. Segments whose records all checked out keep no
 * per-record state.
 */
export class RecordChecks {
  private readonly segments = new Map<number, SegmentRecords>();
  /** Segments, not being written any more, whose every record checked out. */
  private readonly allGood = new Set<number>();

  constructor(
    private readonly fileHeader: number,
    /** Told once of each corrupt record found. */
    private readonly onCorrupt: (err: CorruptRecordError) => void,
  ) {}

  /**
   * Throws CorruptRecordError unless the span lies inside one record whose checksum matches.
   * `size` is the segment's length now; `closed` says it is not written any more. Returns the
   * bytes known good with it (the record, or the whole segment), so that the caller need not
   * ask again for the other spans there.
   */
  check(
    segment: number,
    offset: number,
    length: number,
    read: SegmentReader,
    size: number,
    closed: boolean,
  ): CheckedBytes {
    if (this.allGood.has(segment)) return WHOLE_SEGMENT;
    const records = this.recordsOf(segment);
    const i = this.recordIndex(records, offset, length, read, size);
    if (i < 0) {
      throw new CorruptRecordError(
        segment,
        offset,
        "no whole record holds this message (a length field is damaged)",
      );
    }
    if (records.states[i] === UNCHECKED) this.verify(segment, records, i, read);
    if (records.states[i] === BAD) {
      throw new CorruptRecordError(
        segment,
        records.starts[i],
        "the record's bytes do not match its checksum",
      );
    }
    const good = { start: records.starts[i], end: records.ends[i] };
    if (closed && records.unchecked === 0 && records.walked >= size) {
      this.segments.delete(segment);
      this.allGood.add(segment);
    }
    return good;
  }

  private recordsOf(segment: number): SegmentRecords {
    let records = this.segments.get(segment);
    if (!records) {
      records = new SegmentRecords(this.fileHeader);
      this.segments.set(segment, records);
    }
    return records;
  }

  /** The index of the record holding the span, walking the segment as far as needed; -1 when none. */
  private recordIndex(
    records: SegmentRecords,
    offset: number,
    length: number,
    read: SegmentReader,
    size: number,
  ): number {
    const i = records.find(offset, length);
    if (i >= 0 || records.walked >= size) return i;
    this.walk(records, read, size);
    return records.find(offset, length);
  }

  /**
   * Where the record holding the span starts and ends when its checksum is still to be checked
   * (walking the segment as far as needed to find it); undefined when it checked out already or
   * no whole record holds the span (check() then says why).
   */
  uncheckedRecord(
    segment: number,
    offset: number,
    length: number,
    read: SegmentReader,
    size: number,
  ): { start: number; end: number } | undefined {
    if (this.allGood.has(segment)) return undefined;
    const records = this.recordsOf(segment);
    const i = this.recordIndex(records, offset, length, read, size);
    if (i < 0 || records.states[i] !== UNCHECKED) return undefined;
    return { start: records.starts[i], end: records.ends[i] };
  }

  /**
   * Notes a record just appended from `start` to `end` of the segment: reads find it without
   * walking the file for its header. Its checksum is still checked when it is first read (the
   * disk may not hold what was written). Only a record right where the walk would look next is
   * noted: the list of records stays in file order with nothing skipped.
   */
  appended(segment: number, start: number, end: number): void {
    if (this.allGood.has(segment)) return;
    const records = this.recordsOf(segment);
    if (records.walked !== start) return;
    records.starts.push(start);
    records.ends.push(end);
    records.states.push(UNCHECKED);
    records.unchecked++;
    records.walked = end;
  }

  /** Forgets a deleted segment. */
  forget(segment: number): void {
    this.segments.delete(segment);
    this.allGood.delete(segment);
  }

  private verify(segment: number, records: SegmentRecords, i: number, read: SegmentReader): void {
    const start = records.starts[i];
    const bytes = read(start, records.ends[i] - start);
    const good = crc32(bytes.subarray(RECORD_HEADER)) === bytes.readUInt32LE(4);
    records.states[i] = good ? GOOD : BAD;
    records.unchecked--;
    if (!good)
      this.onCorrupt(new CorruptRecordError(segment, start, "the record's bytes do not match its checksum"));
  }

  /** Walks record headers from where the last walk stopped, reading only headers of large records. */
  private walk(records: SegmentRecords, read: SegmentReader, size: number): void {
    let at = records.walked;
    let chunk: Buffer = Buffer.alloc(0);
    let chunkAt = 0;
    let lastLength = 0;
    while (at + RECORD_HEADER <= size) {
      if (at < chunkAt || at + RECORD_HEADER > chunkAt + chunk.length) {
        chunkAt = at;
        // After a large record the next is likely large too: its header alone, not the bytes
        // of the records a chunk would hold (the walk would read the whole segment).
        const want = lastLength > LARGE_RECORD ? RECORD_HEADER : SCAN_CHUNK;
        chunk = read(at, Math.min(want, size - at));
        if (chunk.length < RECORD_HEADER) break;
      }
      lastLength = chunk.readUInt32LE(at - chunkAt);
      const end = at + RECORD_HEADER + lastLength;
      // A record running past the end is being written, torn, or has a damaged length: the
      // messages it would hold are not found in a whole record, which fails their reads.
      if (end > size) break;
      records.starts.push(at);
      records.ends.push(end);
      records.states.push(UNCHECKED);
      records.unchecked++;
      at = end;
    }
    records.walked = at;
  }
}
