import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { crc32 } from "node:zlib";

const MAGIC = 0x4d51394a; // "MQ9J"
const FORMAT = 1;
const FILE_HEADER = 16;
/** Bytes before each record body: its length and CRC-32. */
export const RECORD_HEADER = 8;

export interface JournalContents {
  /** The generation the file was started with; 0 when the file is new or empty. */
  generation: number;
  /** Whole records in write order; a torn or corrupt tail is left out. */
  records: Buffer[];
  /** Bytes after the last whole record (a write cut short by a crash or a full disk). */
  tornBytes: number;
}

/**
 * An append-only file of records written since the last SQLite commit. A SEND
 * is durable once its record is written (and, with `sync`, flushed), which
 * costs one write() where a commit costs a B-tree update and several WAL
 * pages. After each commit the file starts over under a new generation; the
 * generation the database last absorbed is kept in the database, so a file
 * left behind by a crash between commit and restart is replayed only when
 * its records are not in the database yet.
 */
export class AppendJournal {
  private constructor(
    private readonly fd: number,
    private readonly sync: boolean,
  ) {}

  /** Reads what the file holds (for replay) and opens it for appending. */
  static open(file: string, sync: boolean): { journal: AppendJournal; contents: JournalContents } {
    const fd = openSync(file, "a+");
    try {
      const contents = fstatSync(fd).size === 0 ? emptyContents() : parseJournal(readFileSync(file));
      return { journal: new AppendJournal(fd, sync), contents };
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Appends one record: its body follows RECORD_HEADER bytes the journal fills in. */
  append(record: Buffer): void {
    const body = record.subarray(RECORD_HEADER);
    record.writeUInt32LE(body.length, 0);
    record.writeUInt32LE(crc32(body), 4);
    writeAll(this.fd, record);
    if (this.sync) fdatasyncSync(this.fd);
  }

  /** Empties the file and stamps it with `generation`: everything before is in the database. */
  restart(generation: number): void {
    ftruncateSync(this.fd, 0);
    const header = Buffer.alloc(FILE_HEADER);
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(FORMAT, 4);
    header.writeDoubleLE(generation, 8);
    writeAll(this.fd, header);
    if (this.sync) fdatasyncSync(this.fd);
  }

  close(): void {
    closeSync(this.fd);
  }
}

function emptyContents(): JournalContents {
  return { generation: 0, records: [], tornBytes: 0 };
}

function writeAll(fd: number, bytes: Buffer): void {
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written);
}

export function parseJournal(bytes: Buffer): JournalContents {
  // A header cut short is a restart interrupted by a crash: nothing was appended after it.
  if (bytes.length < FILE_HEADER) return { ...emptyContents(), tornBytes: bytes.length };
  if (bytes.readUInt32LE(0) !== MAGIC || bytes.readUInt32LE(4) !== FORMAT) {
    throw new Error("the append journal has an unknown format (not written by this mq9 version)");
  }
  const generation = bytes.readDoubleLE(8);
  const records: Buffer[] = [];
  let at = FILE_HEADER;
  while (at + RECORD_HEADER <= bytes.length) {
    const length = bytes.readUInt32LE(at);
    const end = at + RECORD_HEADER + length;
    if (end > bytes.length) break;
    const body = bytes.subarray(at + RECORD_HEADER, end);
    if (crc32(body) !== bytes.readUInt32LE(at + 4)) break;
    records.push(body);
    at = end;
  }
  return { generation, records, tornBytes: bytes.length - at };
}
