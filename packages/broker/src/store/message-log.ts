import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import {
  type AppendedRow,
  decodeAppendedRows,
  type EncodedRows,
  encodeAppendedRows,
  type SpanLocation,
  spanLength,
  splitSpan,
} from "./appended-rows.js";
import { parseJournal } from "./legacy-journal.js";
import { type LocatedRow, locationOf } from "./message-row-writer.js";
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

/**
 * A segment whose stored messages hold at most this fraction of a segment's size (1/16) has
 * them moved into their rows, so the segment can be deleted.
 */
const SPARSE_FRACTION = 16;

/** A segment's live messages are copied forward at most this often (each copy holds the event loop). */
const COPY_INTERVAL_MS = 1000;
/** Rows per record written by a copy. */
const COPY_ROWS_PER_RECORD = 1024;

/** A row as a copy reads it: everything but the bytes, which are in the log. */
interface CopiedRow extends LocatedRow {
  mbox: number;
  priority: number;
  msg_key: string | null;
  tags: string | null;
  created_ms: number;
  expires_ms: number | null;
}

/** Spans at most this far apart are read together (the rest of a row's record lies between). */
const MAX_READ_GAP = 4096;
/** Bytes at most in one read of neighbouring spans. */
const MAX_READ = 1024 * 1024;

/** A message's header (null when it has none) and payload. */
export interface MessageBytes {
  header: Buffer | null;
  payload: Buffer;
}

/** The message log's options: the segment log's, and the crash hook of its tests. */
export interface MessageLogOptions extends SegmentLogOptions {
  /**
   * Crash tests only: called once a copy-forward's records are written, before the commit that
   * points the rows at them (a test kills its process here).
   */
  afterCopyWritten?: () => void;
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
  /** Segments that could not be compacted or deleted; left alone until the next start. */
  private readonly kept = new Set<number>();
  private lastCopyMs = 0;
  private readonly stmt;
  private readonly savePosition: (position: LogPosition) => void;

  private constructor(
    private readonly db: Database.Database,
    readonly dir: string,
    private readonly segments: SegmentLog,
    private readonly segmentBytes: number,
    private readonly afterCopyWritten?: () => void,
  ) {
    this.savePosition = positionSaver(db);
    this.stmt = {
      anyRowIn: db.prepare<[number, number, number], { one: number }>(
        "SELECT 1 AS one FROM messages WHERE msg_id BETWEEN ? AND ? AND seg = ? LIMIT 1",
      ),
      rowsIn: db.prepare<[number, number, number], LocatedRow>(
        "SELECT msg_id, seg, seg_at, seg_len FROM messages WHERE msg_id BETWEEN ? AND ? AND seg = ?",
      ),
      rowsToCopy: db.prepare<[number, number, number], CopiedRow>(
        `SELECT msg_id, mbox, priority, msg_key, tags, created_ms, expires_ms, seg, seg_at, seg_len
         FROM messages WHERE msg_id BETWEEN ? AND ? AND seg = ? ORDER BY msg_id`,
      ),
      movePointer: db.prepare("UPDATE messages SET seg = ?, seg_at = ?, seg_len = ? WHERE msg_id = ?"),
      moveInline: db.prepare(
        "UPDATE messages SET header = ?, payload = ?, seg = NULL, seg_at = NULL, seg_len = NULL WHERE msg_id = ?",
      ),
    };
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
    options: MessageLogOptions,
  ): { log: MessageLog; replay: ReplayedRows; legacy: ReplayedRows; legacyJournal?: string } {
    const from = appliedPosition(db);
    const dir = join(dataDir, "log");
    const opened = SegmentLog.open(dir, from, options);
    const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    const log = new MessageLog(db, dir, opened.log, segmentBytes, options.afterCopyWritten);
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
   * close together in one segment are read with one read, as messages sent in a row are.
   */
  readMany(
    locations: readonly (SpanLocation | undefined)[],
  ): (MessageBytes | CorruptRecordError | undefined)[] {
    const out: (MessageBytes | CorruptRecordError | undefined)[] = new Array(locations.length);
    // Each span's record is checked against its CRC first: a span whose record does not
    // check out gets the error instead of its bytes, and is not read with its neighbours.
    const readable = locations.map((at, k) => {
      if (at === undefined) return undefined;
      try {
        this.segments.check(at.segment, at.offset, at.length);
        return at;
      } catch (err) {
        if (!(err instanceof CorruptRecordError)) throw err;
        out[k] = err;
        return undefined;
      }
    });
    let i = 0;
    while (i < readable.length) {
      const first = readable[i];
      if (first === undefined) {
        i++;
        continue;
      }
      // Extend the read while the next span follows closely in the same segment.
      let end = first.offset + first.length;
      let j = i + 1;
      for (; j < readable.length; j++) {
        const next = readable[j];
        if (next === undefined || next.segment !== first.segment) break;
        if (
          next.offset < end ||
          next.offset - end > MAX_READ_GAP ||
          next.offset + next.length - first.offset > MAX_READ
        )
          break;
        end = next.offset + next.length;
      }
      const bytes = this.segments.read(first.segment, first.offset, end - first.offset);
      for (let k = i; k < j; k++) {
        const at = readable[k] as SpanLocation;
        out[k] = splitSpan(bytes.subarray(at.offset - first.offset, at.offset - first.offset + at.length));
      }
      i = j;
    }
    return out;
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

  /**
   * Deletes the segments no committed row points into, after moving the few
   * messages left in one mostly-emptied segment into their rows (a long-lived
   * message would otherwise keep a whole segment on disk). Only older
   * segments qualify: every record in them is in the database (saveApplied
   * passed them). Call with no transaction open; `atomically` runs a change
   * in one.
   */
  removeUnused(atomically: (change: () => void) => void): void {
    for (const segment of [...this.segments.segments()]) {
      if (segment >= this.segments.current) break;
      if (this.kept.has(segment)) continue;
      try {
        this.removeIfUnused(segment, atomically);
      } catch {
        // Bytes it should hold are missing, or the file cannot go: it stays, and the
        // messages in it fail alone when read, not every change that comes after.
        this.kept.add(segment);
      }
    }
  }

  private removeIfUnused(segment: number, atomically: (change: () => void) => void): void {
    const share = this.usage.of(segment);
    if (share.rows > 0 && share.bytes * SPARSE_FRACTION > this.segmentBytes) {
      // Mostly dead, not nearly empty: its live messages are copied to the end of the log.
      if (share.bytes * 2 > this.segmentBytes) return;
      const now = Date.now();
      if (now - this.lastCopyMs < COPY_INTERVAL_MS) return;
      this.lastCopyMs = now;
      if (!this.copyForward(segment, share, atomically)) {
        this.kept.add(segment);
        return;
      }
    } else if (share.rows > 0) {
      let left = 0;
      atomically(() => {
        left = this.moveInline(segment, share);
      });
      if (left > 0) {
        this.kept.add(segment);
        return;
      }
      this.usage.forget(segment);
    }
    if (share.lastId >= share.firstId && this.stmt.anyRowIn.get(share.firstId, share.lastId, segment)) return;
    this.segments.remove(segment);
    this.usage.forget(segment);
  }

  /**
   * Copies the live messages of a segment into new records at the end of the log and points
   * their rows there, in one transaction that also records those records as applied (a
   * replay after a crash between the two finds the rows and replaces them, see
   * MessageRowWriter's `replaceRows`). False when a message in it is corrupt: nothing moves.
   */
  private copyForward(
    segment: number,
    share: SegmentShare,
    atomically: (change: () => void) => void,
  ): boolean {
    const rows = this.stmt.rowsToCopy.all(share.firstId, share.lastId, segment);
    const bytes = this.readMany(rows.map(locationOf));
    if (bytes.some((b) => b instanceof CorruptRecordError)) return false;
    const copies: AppendedRow[] = rows.map((row, i) => {
      const read = bytes[i] as MessageBytes;
      return {
        id: row.msg_id,
        mbox: row.mbox,
        priority: row.priority,
        key: row.msg_key,
        tags: row.tags,
        header: read.header,
        payload: read.payload,
        createdMs: row.created_ms,
        expiresMs: row.expires_ms,
        dueMs: null,
      };
    });
    for (let first = 0; first < copies.length; first += COPY_ROWS_PER_RECORD) {
      const group = copies.slice(first, first + COPY_ROWS_PER_RECORD);
      this.append(group, encodeAppendedRows(group, RECORD_HEADER));
    }
    this.afterCopyWritten?.();
    atomically(() => {
      for (const copy of copies) {
        const to = copy.located as SpanLocation;
        this.stmt.movePointer.run(to.segment, to.offset, to.length, copy.id);
      }
      this.saveApplied();
    });
    for (const copy of copies) this.stored(copy.located as SpanLocation, copy.id);
    this.usage.forget(segment);
    return true;
  }

  /** Moves the messages of a segment into their rows; returns how many could not be (corrupt ones). */
  private moveInline(segment: number, share: SegmentShare): number {
    const rows = this.stmt.rowsIn.all(share.firstId, share.lastId, segment);
    let left = 0;
    this.readMany(rows.map(locationOf)).forEach((bytes, i) => {
      // A message whose record is corrupt stays where it is (its reads fail), and so does the segment.
      if (bytes instanceof CorruptRecordError) left++;
      else if (bytes) this.stmt.moveInline.run(bytes.header, bytes.payload, rows[i].msg_id);
    });
    return left;
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
