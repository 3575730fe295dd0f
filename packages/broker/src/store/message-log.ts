import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import {
  type AppendedRow,
  decodeAppendedRows,
  type EncodedRows,
  type SpanLocation,
  spanLength,
  splitSpan,
} from "./appended-rows.js";
import { parseJournal } from "./legacy-journal.js";
import { CorruptRecordError } from "./record-checks.js";
import { RECORD_HEADER } from "./record-framing.js";
import {
  DEFAULT_SEGMENT_BYTES,
  type LogPosition,
  type LogRecord,
  readLogRange,
  SegmentLog,
  type SegmentLogOptions,
} from "./segment-log.js";
import { type SegmentShare, SegmentUsage } from "./segment-usage.js";

/** Spans at most this far apart are read together (the rest of a row's record lies between). */
const MAX_READ_GAP = 4096;
/** Bytes at most in one read of neighbouring spans. */
const MAX_READ = 1024 * 1024;

/** A message's header (null when it has none) and payload. */
export interface MessageBytes {
  header: Buffer | null;
  payload: Buffer;
}

/** Rows read back from the log at start-up that the database does not hold yet. */
export type ReplayedRows = AppendedRow[];

/**
 * The SEND side of the embedded store's durability: records go to the
 * segment log before a SEND is answered, rows in SQLite point at their
 * header and payload there, the database remembers how far it has absorbed
 * the log, and segments nobody points into any more are deleted.
 */
export class MessageLog {
  private readonly usage = new SegmentUsage();
  private readonly savePosition: (position: LogPosition) => void;

  private constructor(
    private readonly db: Database.Database,
    readonly dir: string,
    private readonly segments: SegmentLog,
    /** The size at which a new segment starts. */
    readonly segmentBytes: number,
  ) {
    this.savePosition = positionSaver(db);
  }

  /**
   * Opens the log under `dataDir` and returns the rows a crash left out of
   * the database, in write order, for the caller to write; also the rows of a
   * journal left by an mq9 version before the log (held inline, as they are)
   * and that file, for the caller to delete once they are committed.
   */
  static open(
    db: Database.Database,
    dataDir: string,
    options: SegmentLogOptions,
  ): { log: MessageLog; replay: ReplayedRows; legacy: ReplayedRows; legacyJournal?: string } {
    const from = appliedPosition(db);
    const dir = join(dataDir, "log");
    const opened = SegmentLog.open(dir, from, options);
    const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    const log = new MessageLog(db, dir, opened.log, segmentBytes);
    const shares = db
      .prepare<[], SegmentShare & { seg: number }>(
        `SELECT seg, count(*) AS rows, sum(seg_len) AS bytes, min(msg_id) AS firstId, max(msg_id) AS lastId
         FROM messages WHERE seg IS NOT NULL GROUP BY seg`,
      )
      .all();
    for (const share of shares) log.usage.load(share.seg, share);
    const replay = locatedRowsOf(opened.records);
    for (const row of replay) {
      if (row.dueMs === null && row.located) log.stored(row.located, row.id);
    }
    const journal = join(dataDir, "mq9.journal");
    if (!existsSync(journal)) return { log, replay, legacy: [] };
    const contents = parseJournal(readFileSync(journal));
    const applied = db
      .prepare<[], { value: number }>("SELECT value FROM meta WHERE name = 'journal_applied'")
      .get();
    const legacy =
      contents.generation > (applied?.value ?? 0)
        ? contents.records.flatMap((r) => decodeAppendedRows(r))
        : [];
    return { log, replay, legacy, legacyJournal: journal };
  }

  /**
   * Writes the record of `rows` (encoded with RECORD_HEADER bytes of headroom): durable once this
   * returns. Each row then holds where its header and payload are in the log.
   */
  append(rows: AppendedRow[], encoded: EncodedRows): void {
    const written = this.segments.append(encoded.bytes);
    const recordStart = written.bodyOffset - RECORD_HEADER;
    rows.forEach((row, i) => {
      row.located = spanOf(row, written.segment, recordStart + encoded.spans[i]);
    });
  }

  /**
   * The headers and payloads of several rows (undefined where a row has none in the log): spans
   * close together in one segment, as messages sent in a row are, are read with one read, which
   * takes along the whole records whose checksums are still to be checked, so those are checked
   * from the same bytes. A span whose record does not check out gets the error instead of its
   * bytes; the others of its read are served all the same.
   */
  readMany(
    locations: readonly (SpanLocation | undefined)[],
  ): (MessageBytes | CorruptRecordError | undefined)[] {
    const out: (MessageBytes | CorruptRecordError | undefined)[] = new Array(locations.length);
    let i = 0;
    while (i < locations.length) {
      const first = locations[i];
      if (first === undefined) {
        i++;
        continue;
      }
      // Extend the run while the next span follows closely in the same segment.
      let end = first.offset + first.length;
      let j = i + 1;
      for (; j < locations.length; j++) {
        const next = locations[j];
        if (next === undefined || next.segment !== first.segment) break;
        if (
          next.offset < end ||
          next.offset - end > MAX_READ_GAP ||
          next.offset + next.length - first.offset > MAX_READ
        )
          break;
        end = next.offset + next.length;
      }
      this.readRun(locations as readonly SpanLocation[], i, j, out);
      i = j;
    }
    return out;
  }

  /** Reads the spans `from` to `to` (one segment, ascending) with one read into `out`. */
  private readRun(
    locations: readonly SpanLocation[],
    from: number,
    to: number,
    out: (MessageBytes | CorruptRecordError | undefined)[],
  ): void {
    const first = locations[from];
    const last = locations[to - 1];
    const { segment } = first;
    // Records in between lie whole inside the run; the first and last may stick out of it.
    let start = first.offset;
    let end = last.offset + last.length;
    start = Math.min(
      start,
      this.segments.uncheckedRecord(segment, first.offset, first.length)?.start ?? start,
    );
    end = Math.max(end, this.segments.uncheckedRecord(segment, last.offset, last.length)?.end ?? end);
    const read = { start, bytes: this.segments.readUpTo(segment, start, end - start) };
    // Spans inside bytes that checked out already (the record of the last span) need no check.
    let good = { start: 0, end: -1 };
    for (let k = from; k < to; k++) {
      const at = locations[k];
      if (at.offset < good.start || at.offset + at.length > good.end) {
        try {
          good = this.segments.check(segment, at.offset, at.length, read);
        } catch (err) {
          if (!(err instanceof CorruptRecordError)) throw err;
          out[k] = err;
          continue;
        }
      }
      const bytes =
        at.offset + at.length <= start + read.bytes.length
          ? read.bytes.subarray(at.offset - start, at.offset - start + at.length)
          : this.segments.read(segment, at.offset, at.length);
      out[k] = splitSpan(bytes);
    }
  }

  stored(located: SpanLocation, id: number): void {
    this.usage.add(located.segment, located.length, id);
  }

  released(located: SpanLocation): void {
    this.usage.remove(located.segment, located.length);
  }

  /** Records in the database (call inside the transaction) that it holds the log up to `to` (default: all of it). */
  saveApplied(to: LogPosition = this.segments.end): void {
    this.savePosition(to);
  }

  /** Segment files on disk, the header and payload bytes of stored messages in them, and their size. */
  status(): { segments: number; messageBytes: number; logBytes: number } {
    return {
      segments: this.segments.segments().length,
      messageBytes: this.usage.liveBytes(),
      logBytes: this.segments.bytesOnDisk(),
    };
  }

  /** Where the next record goes. */
  get end(): LogPosition {
    return this.segments.end;
  }

  /** The rows of the records the database does not hold yet (those a failed worker left). */
  unappliedRows(): AppendedRow[] {
    return locatedRowsOf(readLogRange(this.dir, appliedPosition(this.db), this.segments.end));
  }

  /** The segments before the one being written, oldest first: every record in them is applied. */
  closedSegments(): number[] {
    return this.segments.segments().filter((segment) => segment < this.segments.current);
  }

  /** What stored messages hold of a segment. */
  share(segment: number): SegmentShare {
    return this.usage.of(segment);
  }

  /** Stops counting a segment whose messages moved elsewhere (the file stays until removed). */
  forgetShare(segment: number): void {
    this.usage.forget(segment);
  }

  /** Deletes a segment file no row points into. */
  removeSegment(segment: number): void {
    this.segments.remove(segment);
    this.usage.forget(segment);
  }

  close(): void {
    this.segments.close();
  }
}

/** Rows of log records, each with where its header and payload are in the log. */
export function locatedRowsOf(records: readonly LogRecord[]): AppendedRow[] {
  const rows: AppendedRow[] = [];
  for (const record of records) {
    for (const row of decodeAppendedRows(record.body)) {
      const { spanAt, ...rest } = row;
      rows.push({ ...rest, located: spanOf(row, record.segment, record.bodyOffset + spanAt) });
    }
  }
  return rows;
}

/** Saves (inside the caller's transaction) how far into the log the database holds the records. */
export function positionSaver(db: Database.Database): (position: LogPosition) => void {
  const save = db.prepare(
    "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
  );
  return (position) => {
    save.run("log_segment", position.segment);
    save.run("log_offset", position.offset);
  };
}

function appliedPosition(db: Database.Database): LogPosition {
  const value = (name: string) =>
    db.prepare<[string], { value: number }>("SELECT value FROM meta WHERE name = ?").get(name)?.value ?? 0;
  return { segment: value("log_segment"), offset: value("log_offset") };
}

function spanOf(row: AppendedRow, segment: number, offset: number): SpanLocation {
  return { segment, offset, length: spanLength(row) };
}
