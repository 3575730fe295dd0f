import { crc32 } from "node:zlib";

/** Bytes before each record body in the message log (and the journal before it): length, CRC-32. */
export const RECORD_HEADER = 8;

/**
 * The whole records in `bytes` from `start`, each body with the offset it starts at; `end` is
 * where the last whole one ends. A torn or corrupt record (a write cut short) ends the scan.
 */
export function scanRecords(
  bytes: Buffer,
  start: number,
): { bodies: { at: number; body: Buffer }[]; end: number } {
  const bodies: { at: number; body: Buffer }[] = [];
  let at = start;
  while (at + RECORD_HEADER <= bytes.length) {
    const end = at + RECORD_HEADER + bytes.readUInt32LE(at);
    if (end > bytes.length) break;
    const body = bytes.subarray(at + RECORD_HEADER, end);
    if (crc32(body) !== bytes.readUInt32LE(at + 4)) break;
    bodies.push({ at: at + RECORD_HEADER, body });
    at = end;
  }
  return { bodies, end: at };
}

/** Bytes a record of the message log cannot be shorter than: a body holds a row count and one row. */
const MIN_BODY = 4 + 53;

/** A stretch of a segment that held no whole record with a matching checksum, between whole ones. */
export interface CorruptStretch {
  /** Offset (in the scanned bytes) of the first byte that did not check out. */
  at: number;
  /** Where the next whole record starts. */
  end: number;
}

/**
 * Like scanRecords for a log segment, but a record whose checksum does not match is skipped
 * when a whole record follows it (a byte flipped on the disk, not a write cut short): the scan
 * goes on from there and reports the stretch, so records after it are not taken for a torn
 * tail and cut off. Only when nothing whole follows does the bad stretch end the scan.
 */
export function scanSegmentRecords(
  bytes: Buffer,
  start: number,
): { bodies: { at: number; body: Buffer }[]; end: number; corrupt: CorruptStretch[] } {
  const bodies: { at: number; body: Buffer }[] = [];
  const corrupt: CorruptStretch[] = [];
  let at = start;
  while (at + RECORD_HEADER <= bytes.length) {
    if (wholeRecordAt(bytes, at)) {
      const end = at + RECORD_HEADER + bytes.readUInt32LE(at);
      bodies.push({ at: at + RECORD_HEADER, body: bytes.subarray(at + RECORD_HEADER, end) });
      at = end;
      continue;
    }
    const next = nextWholeRecord(bytes, at);
    if (next === undefined) break;
    corrupt.push({ at, end: next });
    at = next;
  }
  return { bodies, end: at, corrupt };
}

/** Whether a whole record with a matching checksum starts at `at`. */
export function wholeRecordAt(bytes: Buffer, at: number): boolean {
  if (at + RECORD_HEADER > bytes.length) return false;
  const length = bytes.readUInt32LE(at);
  const end = at + RECORD_HEADER + length;
  if (length < MIN_BODY || end > bytes.length) return false;
  return crc32(bytes.subarray(at + RECORD_HEADER, end)) === bytes.readUInt32LE(at + 4);
}

/** The first whole record after a bad one at `at`: where its length says it ends, else found byte by byte. */
function nextWholeRecord(bytes: Buffer, at: number): number | undefined {
  const claimed = at + RECORD_HEADER + bytes.readUInt32LE(at);
  if (claimed < bytes.length && wholeRecordAt(bytes, claimed)) return claimed;
  for (let p = at + 1; p + RECORD_HEADER + MIN_BODY <= bytes.length; p++) {
    const length = bytes.readUInt32LE(p);
    if (length < MIN_BODY || p + RECORD_HEADER + length > bytes.length) continue;
    // A record body starts with its row count: a cheap filter before the checksum.
    const rows = bytes.readUInt32LE(p + RECORD_HEADER);
    if (rows === 0 || rows * 53 > length) continue;
    if (wholeRecordAt(bytes, p)) return p;
  }
  return undefined;
}
