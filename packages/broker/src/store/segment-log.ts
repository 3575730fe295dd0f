import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { type CheckedBytes, CorruptRecordError, RecordChecks } from "./record-checks.js";
import { type CorruptStretch, RECORD_HEADER, scanSegmentRecords } from "./record-framing.js";

const MAGIC = 0x4d513953; // "MQ9S"
const FORMAT = 1;
const FILE_HEADER = 16;

/** A segment past this size is closed and the next one started. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const SEGMENT_FILE = /^(\d{12})\.seg$/;

/** Bytes of a segment read already, from byte `start`. */
export interface ReadBytes {
  start: number;
  bytes: Buffer;
}

/** A place in the log: the byte `offset` of segment number `segment`. */
export interface LogPosition {
  segment: number;
  offset: number;
}

/** A record read back from the log: where its body starts and where the record ends. */
export interface LogRecord {
  segment: number;
  bodyOffset: number;
  end: number;
  body: Buffer;
}

export interface SegmentLogOptions {
  /** Flush every append to the disk (fdatasync), not only to the OS. */
  sync: boolean;
  segmentBytes?: number;
  /** Told of each record found corrupt: at start-up among those replayed, later when read. */
  onCorrupt?: (err: CorruptRecordError) => void;
}

/**
 * The message log: numbered append-only segment files of CRC-checked
 * records. A SEND is durable once its record is written (and, with `sync`,
 * flushed): one write() for a whole commit group. Payloads stay in the log and
 * SQLite rows point at them, so a message is written once, not again into the
 * WAL and the database file. Segments are removed by the store once no row
 * points into them.
 */
export class SegmentLog {
  private readonly readers = new Map<number, number>();
  /** Sizes of the segments not being written, as read when first opened for reading. */
  private readonly sizes = new Map<number, number>();
  private readonly checks: RecordChecks;
  /** Segment numbers on disk, oldest first. */
  private readonly onDisk: number[];
  private writer: number;
  private size: number;
  /** Set when a failed write could not be undone: appending after torn bytes would hide records. */
  private broken?: Error;

  private constructor(
    private readonly dir: string,
    private readonly options: SegmentLogOptions,
    private currentSegment: number,
    existing: number[],
  ) {
    this.onDisk = existing.includes(currentSegment) ? [...existing] : [...existing, currentSegment];
    this.checks = new RecordChecks(FILE_HEADER, (err) => options.onCorrupt?.(err));
    this.writer = openSync(this.fileOf(currentSegment), "a+");
    this.size = fstatSync(this.writer).size;
    if (this.size === 0) this.writeHeader();
  }

  /**
   * Opens the log in `dir`, returning the records after `from` (those the
   * database does not hold yet). A torn tail of the newest segment, a write a
   * crash cut short, is cut off so new records follow whole ones.
   */
  static open(
    dir: string,
    from: LogPosition,
    options: SegmentLogOptions,
  ): { log: SegmentLog; records: LogRecord[] } {
    mkdirSync(dir, { recursive: true });
    const segments = listSegments(dir);
    const records: LogRecord[] = [];
    for (const segment of segments) {
      if (segment < from.segment) continue;
      const file = join(dir, segmentName(segment));
      const start = segment === from.segment ? Math.max(from.offset, FILE_HEADER) : FILE_HEADER;
      const read = readRecords(file, segment, start);
      records.push(...read.records);
      for (const stretch of read.corrupt) {
        options.onCorrupt?.(
          new CorruptRecordError(
            segment,
            stretch.at,
            `${stretch.end - stretch.at} bytes of records that do not match their checksums were skipped; the SENDs in them are lost`,
          ),
        );
      }
      if (read.tornBytes > 0 && segment === segments[segments.length - 1]) {
        const fd = openSync(file, "r+");
        try {
          ftruncateSync(fd, read.end);
        } finally {
          closeSync(fd);
        }
      }
    }
    let newest = Math.max(segments[segments.length - 1] ?? 0, from.segment, 1);
    // A newest segment shorter than what the database absorbed of it lost bytes (a power loss
    // with sync normal, a hand-made copy): records written after its end would sit before the
    // absorbed position, where a replay does not look. They go to a fresh segment instead.
    if (newest === from.segment && segments.includes(newest)) {
      if (statSync(join(dir, segmentName(newest))).size < from.offset) newest++;
    }
    return { log: new SegmentLog(dir, options, newest, segments), records };
  }

  /** Bytes of the segment files on disk, all together. */
  bytesOnDisk(): number {
    let bytes = 0;
    for (const segment of this.onDisk)
      bytes += segment === this.currentSegment ? this.size : this.sizeOf(segment);
    return bytes;
  }

  /** Segment numbers present on disk, oldest first. */
  segments(): readonly number[] {
    return this.onDisk;
  }

  get current(): number {
    return this.currentSegment;
  }

  /** Where the next record goes. */
  get end(): LogPosition {
    return { segment: this.currentSegment, offset: this.size };
  }

  /**
   * Appends one record: its body follows RECORD_HEADER bytes the log fills in.
   * Returns where the body landed.
   */
  append(record: Buffer): LogRecord {
    if (this.broken) throw this.broken;
    const segmentBytes = this.options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    if (this.size > FILE_HEADER && this.size + record.length > segmentBytes) this.rotate();
    const body = record.subarray(RECORD_HEADER);
    record.writeUInt32LE(body.length, 0);
    record.writeUInt32LE(crc32(body), 4);
    const at = this.size;
    try {
      writeAll(this.writer, record);
      if (this.options.sync) fdatasyncSync(this.writer);
    } catch (err) {
      this.undoTo(at);
      throw err;
    }
    this.size = at + record.length;
    this.checks.appended(this.currentSegment, at, this.size);
    return { segment: this.currentSegment, bodyOffset: at + RECORD_HEADER, end: this.size, body };
  }

  /** `length` bytes at `offset` of a segment. */
  read(segment: number, offset: number, length: number): Buffer {
    const bytes = this.readUpTo(segment, offset, length);
    if (bytes.length < length) {
      throw new Error(`segment ${segmentName(segment)} ends before byte ${offset + length}`);
    }
    return bytes;
  }

  /**
   * Throws CorruptRecordError unless `length` bytes at `offset` lie in one record of the
   * segment whose checksum matches (checked the first time, see RecordChecks, from `read`'s
   * bytes where they hold the record). Returns where the bytes known good with it lie.
   */
  check(segment: number, offset: number, length: number, read?: ReadBytes): CheckedBytes {
    const closed = segment !== this.currentSegment;
    const size = closed ? this.sizeOf(segment) : this.size;
    return this.checks.check(segment, offset, length, this.readerOf(segment, read), size, closed);
  }

  /**
   * Where the record holding the span starts and ends while its checksum is still to be checked
   * (see RecordChecks.uncheckedRecord): a read of the span can take the whole record along.
   */
  uncheckedRecord(
    segment: number,
    offset: number,
    length: number,
  ): { start: number; end: number } | undefined {
    const size = segment !== this.currentSegment ? this.sizeOf(segment) : this.size;
    return this.checks.uncheckedRecord(segment, offset, length, this.readerOf(segment), size);
  }

  /** Reads of one segment: from `read`'s bytes where they hold what is asked for, else from the file. */
  private readerOf(segment: number, read?: ReadBytes): (at: number, n: number) => Buffer {
    if (!read) return (at, n) => this.readUpTo(segment, at, n);
    const end = read.start + read.bytes.length;
    return (at, n) =>
      at >= read.start && at + n <= end
        ? read.bytes.subarray(at - read.start, at - read.start + n)
        : this.readUpTo(segment, at, n);
  }

  /** Up to `length` bytes at `offset` of a segment (fewer at its end). */
  readUpTo(segment: number, offset: number, length: number): Buffer {
    const bytes = Buffer.allocUnsafe(length);
    const fd = this.fdOf(segment);
    let done = 0;
    while (done < length) {
      const n = readSync(fd, bytes, done, length - done, offset + done);
      if (n === 0) return bytes.subarray(0, done);
      done += n;
    }
    return bytes;
  }

  private sizeOf(segment: number): number {
    let size = this.sizes.get(segment);
    if (size === undefined) {
      size = fstatSync(this.fdOf(segment)).size;
      this.sizes.set(segment, size);
    }
    return size;
  }

  /** Deletes a segment that is not being written. */
  remove(segment: number): void {
    if (segment === this.currentSegment) return;
    const fd = this.readers.get(segment);
    if (fd !== undefined) closeSync(fd);
    this.readers.delete(segment);
    this.sizes.delete(segment);
    this.checks.forget(segment);
    unlinkSync(this.fileOf(segment));
    this.onDisk.splice(this.onDisk.indexOf(segment), 1);
  }

  close(): void {
    for (const fd of this.readers.values()) closeSync(fd);
    this.readers.clear();
    closeSync(this.writer);
  }

  private rotate(): void {
    const next = this.currentSegment + 1;
    const fd = openSync(this.fileOf(next), "a+");
    closeSync(this.writer);
    this.writer = fd;
    this.currentSegment = next;
    this.onDisk.push(next);
    this.size = 0;
    this.writeHeader();
    // The new file's name must survive a power loss too.
    if (this.options.sync) syncDirectory(this.dir);
  }

  private writeHeader(): void {
    const header = Buffer.alloc(FILE_HEADER);
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(FORMAT, 4);
    header.writeDoubleLE(this.currentSegment, 8);
    writeAll(this.writer, header);
    if (this.options.sync) fdatasyncSync(this.writer);
    this.size = FILE_HEADER;
  }

  /** Cuts off what a failed write left; when even that fails, no further appends are taken. */
  private undoTo(size: number): void {
    try {
      ftruncateSync(this.writer, size);
    } catch (err) {
      this.broken = new Error(`the message log could not undo a failed write: ${(err as Error).message}`);
    }
  }

  private fdOf(segment: number): number {
    let fd = this.readers.get(segment);
    if (fd === undefined) {
      fd = openSync(this.fileOf(segment), "r");
      this.readers.set(segment, fd);
    }
    return fd;
  }

  private fileOf(segment: number): string {
    return join(this.dir, segmentName(segment));
  }
}

function segmentName(segment: number): string {
  return `${String(segment).padStart(12, "0")}.seg`;
}

function listSegments(dir: string): number[] {
  return readdirSync(dir)
    .map((name) => SEGMENT_FILE.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

function writeAll(fd: number, bytes: Buffer): void {
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The whole records between two positions of the log in `dir`, in write order. */
export function readLogRange(dir: string, from: LogPosition, to: LogPosition): LogRecord[] {
  const records: LogRecord[] = [];
  for (let segment = Math.max(from.segment, 1); segment <= to.segment; segment++) {
    const start = segment === from.segment ? Math.max(from.offset, FILE_HEADER) : FILE_HEADER;
    for (const record of readRecords(join(dir, segmentName(segment)), segment, start).records) {
      if (segment === to.segment && record.end > to.offset) break;
      records.push(record);
    }
  }
  return records;
}

/**
 * Whole records of a segment file from byte `start`; a torn tail is left out, and so are
 * corrupt records followed by whole ones (reported in `corrupt`).
 */
export function readRecords(
  file: string,
  segment: number,
  start: number,
): { records: LogRecord[]; end: number; tornBytes: number; corrupt: CorruptStretch[] } {
  const fd = openSync(file, "r");
  let bytes: Buffer;
  try {
    const size = fstatSync(fd).size;
    if (size < FILE_HEADER) return { records: [], end: 0, tornBytes: size, corrupt: [] };
    const header = Buffer.alloc(FILE_HEADER);
    readSync(fd, header, 0, FILE_HEADER, 0);
    if (header.readUInt32LE(0) !== MAGIC || header.readUInt32LE(4) !== FORMAT) {
      throw new Error(`${file} is not a message log segment of this mq9 version`);
    }
    bytes = Buffer.allocUnsafe(Math.max(size - start, 0));
    if (bytes.length > 0) readSync(fd, bytes, 0, bytes.length, start);
  } finally {
    closeSync(fd);
  }
  const { bodies, end, corrupt } = scanSegmentRecords(bytes, 0);
  const records = bodies.map(({ at, body }) => ({
    segment,
    bodyOffset: start + at,
    end: start + at + body.length,
    body,
  }));
  return {
    records,
    end: start + end,
    tornBytes: bytes.length - end,
    corrupt: corrupt.map((stretch) => ({ at: start + stretch.at, end: start + stretch.end })),
  };
}
