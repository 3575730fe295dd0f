import { scanRecords } from "./record-framing.js";

const MAGIC = 0x4d51394a; // "MQ9J"
const FORMAT = 1;
const FILE_HEADER = 16;

export interface JournalContents {
  /** The generation the file was started with; 0 when the file is new or empty. */
  generation: number;
  /** Whole records in write order; a torn or corrupt tail is left out. */
  records: Buffer[];
  /** Bytes after the last whole record (a write cut short by a crash or a full disk). */
  tornBytes: number;
}

/**
 * Reads `mq9.journal`, which mq9 versions before the segment log wrote: the
 * SENDs since their last commit, restarted under a new generation after each
 * one. The database keeps the generation it last absorbed, so the file's
 * records are replayed only when its generation is newer.
 */
export function parseJournal(bytes: Buffer): JournalContents {
  // A header cut short is a restart interrupted by a crash: nothing was appended after it.
  if (bytes.length < FILE_HEADER) return { generation: 0, records: [], tornBytes: bytes.length };
  if (bytes.readUInt32LE(0) !== MAGIC || bytes.readUInt32LE(4) !== FORMAT) {
    throw new Error("the append journal has an unknown format (not written by this mq9 version)");
  }
  const { bodies, end } = scanRecords(bytes, FILE_HEADER);
  return {
    generation: bytes.readDoubleLE(8),
    records: bodies.map((r) => r.body),
    tornBytes: bytes.length - end,
  };
}
