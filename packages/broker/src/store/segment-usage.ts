/** What stored messages hold of one log segment. */
export interface SegmentShare {
  rows: number;
  bytes: number;
  /** Lowest and highest message id ever stored from this segment: its rows lie between. */
  firstId: number;
  lastId: number;
}

/**
 * Rows and bytes each log segment still holds for stored messages, kept up to
 * date as messages are stored and removed, so the store knows which segments
 * nobody reads any more. The counts only point at candidates: a segment is
 * checked against the database before it is deleted (a rolled-back removal
 * would have lowered a count that still stands).
 */
export class SegmentUsage {
  private readonly shares = new Map<number, SegmentShare>();

  add(segment: number, length: number, id: number): void {
    const share = this.shares.get(segment);
    if (share === undefined) {
      this.shares.set(segment, { rows: 1, bytes: length, firstId: id, lastId: id });
      return;
    }
    share.rows++;
    share.bytes += length;
    if (id < share.firstId) share.firstId = id;
    if (id > share.lastId) share.lastId = id;
  }

  /** Adds what the database reported for a segment at start-up. */
  load(segment: number, share: SegmentShare): void {
    this.shares.set(segment, { ...share });
  }

  remove(segment: number, length: number): void {
    const share = this.shares.get(segment);
    if (share === undefined) return;
    share.rows--;
    share.bytes -= length;
  }

  /** The segment's share; rows 0 when nothing points into it. */
  of(segment: number): SegmentShare {
    return this.shares.get(segment) ?? { rows: 0, bytes: 0, firstId: 0, lastId: -1 };
  }

  /** Header and payload bytes of stored messages, all segments together. */
  liveBytes(): number {
    let bytes = 0;
    for (const share of this.shares.values()) bytes += share.bytes;
    return bytes;
  }

  /** Forgets a segment that was deleted. */
  forget(segment: number): void {
    this.shares.delete(segment);
  }
}
