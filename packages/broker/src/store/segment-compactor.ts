import type Database from "better-sqlite3";
import {
  type AppendedRow,
  type EncodedRows,
  encodeAppendedRows,
  type SpanLocation,
} from "./appended-rows.js";
import type { MessageBytes } from "./message-log.js";
import { type LocatedRow, locationOf } from "./message-row-writer.js";
import { CorruptRecordError } from "./record-checks.js";
import { RECORD_HEADER } from "./record-framing.js";
import type { SegmentShare } from "./segment-usage.js";

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

/** What the compactor needs of the message log (MessageLog). */
export interface CompactedLog {
  readonly segmentBytes: number;
  closedSegments(): number[];
  share(segment: number): SegmentShare;
  forgetShare(segment: number): void;
  removeSegment(segment: number): void;
  readMany(
    locations: readonly (SpanLocation | undefined)[],
  ): (MessageBytes | CorruptRecordError | undefined)[];
  append(rows: AppendedRow[], encoded: EncodedRows): void;
  stored(located: SpanLocation, id: number): void;
  saveApplied(): void;
}

export interface SegmentCompactorOptions {
  /**
   * Crash tests only: called once a copy-forward's records are written, before the commit that
   * points the rows at them (a test kills its process here).
   */
  afterCopyWritten?: () => void;
}

/**
 * Gives back the message log's disk space: deletes the segments no committed row points into,
 * after moving the few messages left in a nearly empty segment into their rows, or copying the
 * live messages of a mostly dead one to the end of the log (a long-lived message would otherwise
 * keep a whole segment on disk).
 */
export class SegmentCompactor {
  /** Segments that could not be compacted or deleted; left alone until the next start. */
  private readonly kept = new Set<number>();
  private lastCopyMs = 0;
  private readonly stmt;

  constructor(
    db: Database.Database,
    private readonly log: CompactedLog,
    private readonly options: SegmentCompactorOptions = {},
  ) {
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
      movePointer: db.prepare<[number, number, number, number]>(
        "UPDATE messages SET seg = ?, seg_at = ?, seg_len = ? WHERE msg_id = ?",
      ),
      moveInline: db.prepare<[Buffer | null, Buffer, number]>(
        "UPDATE messages SET header = ?, payload = ?, seg = NULL, seg_at = NULL, seg_len = NULL WHERE msg_id = ?",
      ),
    };
  }

  /**
   * Deletes (or first compacts) the segments no committed row needs. Only older segments
   * qualify: every record in them is in the database. Call with no transaction open;
   * `atomically` runs a change in one.
   */
  removeUnused(atomically: (change: () => void) => void): void {
    for (const segment of this.log.closedSegments()) {
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
    const share = this.log.share(segment);
    const segmentBytes = this.log.segmentBytes;
    if (share.rows > 0 && share.bytes * SPARSE_FRACTION > segmentBytes) {
      // Mostly dead, not nearly empty: its live messages are copied to the end of the log.
      if (share.bytes * 2 > segmentBytes) return;
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
      this.log.forgetShare(segment);
    }
    if (share.lastId >= share.firstId && this.stmt.anyRowIn.get(share.firstId, share.lastId, segment)) return;
    this.log.removeSegment(segment);
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
    const bytes = this.log.readMany(rows.map(locationOf));
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
      this.log.append(group, encodeAppendedRows(group, RECORD_HEADER));
    }
    this.options.afterCopyWritten?.();
    atomically(() => {
      for (const copy of copies) {
        const to = copy.located as SpanLocation;
        this.stmt.movePointer.run(to.segment, to.offset, to.length, copy.id);
      }
      this.log.saveApplied();
    });
    for (const copy of copies) this.log.stored(copy.located as SpanLocation, copy.id);
    this.log.forgetShare(segment);
    return true;
  }

  /** Moves the messages of a segment into their rows; returns how many could not be (corrupt ones). */
  private moveInline(segment: number, share: SegmentShare): number {
    const rows = this.stmt.rowsIn.all(share.firstId, share.lastId, segment);
    let left = 0;
    this.log.readMany(rows.map(locationOf)).forEach((bytes, i) => {
      // A message whose record is corrupt stays where it is (its reads fail), and so does the segment.
      if (bytes instanceof CorruptRecordError) left++;
      else if (bytes) this.stmt.moveInline.run(bytes.header, bytes.payload, rows[i].msg_id);
    });
    return left;
  }
}
