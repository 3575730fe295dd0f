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
