import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { CorruptRecordError, RecordChecks } from "../src/store/record-checks.js";
import { RECORD_HEADER } from "../src/store/record-framing.js";

// A segment file as the message log writes it: a file header, then records of a length, a
// CRC-32 of the body, and the body. Reads go to the real file; each one is noted.
const FILE_HEADER = 16;
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function record(body: string): Buffer {
  const bytes = Buffer.from(body);
  const head = Buffer.alloc(RECORD_HEADER);
  head.writeUInt32LE(bytes.length, 0);
  head.writeUInt32LE(crc32(bytes), 4);
  return Buffer.concat([head, bytes]);
}

/** A segment file of `bodies`' records, where each record starts and ends, and a noting reader. */
function segmentFile(bodies: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "mq9-record-checks-"));
  dirs.push(dir);
  const file = join(dir, "000000000001.seg");
  const records = bodies.map(record);
  const bytes = Buffer.concat([Buffer.alloc(FILE_HEADER), ...records]);
  writeFileSync(file, bytes);
  const spans: { start: number; end: number }[] = [];
  let at = FILE_HEADER;
  for (const r of records) {
    spans.push({ start: at, end: at + r.length });
    at += r.length;
  }
  const reads: [number, number][] = [];
  const read = (offset: number, length: number): Buffer => {
    reads.push([offset, length]);
    const fd = openSync(file, "r");
    try {
      const out = Buffer.alloc(Math.max(0, Math.min(length, bytes.length - offset)));
      readSync(fd, out, 0, out.length, offset);
      return out;
    } finally {
      closeSync(fd);
    }
  };
  const damage = (offset: number) => {
    bytes[offset] ^= 0xff;
    writeFileSync(file, bytes);
  };
  return { size: bytes.length, spans, reads, read, damage };
}

describe("the checks of the message log's records", () => {
  it("finds records appended this run without reading their headers, and checks each one's bytes on its first read", () => {
    const seg = segmentFile(["zero", "one one", "two two two"]);
    const checks = new RecordChecks(FILE_HEADER, () => {});
    for (const { start, end } of seg.spans) checks.appended(1, start, end);
    const [, second, third] = seg.spans;
    const inSecond = second.start + RECORD_HEADER;
    expect(checks.check(1, inSecond, 3, seg.read, seg.size, false)).toEqual(second);
    // One read: the record itself, for its checksum; no walk over the file for headers.
    expect(seg.reads).toEqual([[second.start, second.end - second.start]]);
    // Checked once: the next read of it reads nothing.
    checks.check(1, inSecond, 3, seg.read, seg.size, false);
    expect(seg.reads).toHaveLength(1);
    // Bytes damaged after they were written are still caught.
    seg.damage(third.start + RECORD_HEADER + 1);
    expect(() => checks.check(1, third.start + RECORD_HEADER, 3, seg.read, seg.size, false)).toThrow(
      CorruptRecordError,
    );
  });

  it("leaves a record appended past what is known to the walk, which finds every record in order", () => {
    const seg = segmentFile(["zero", "one one", "two two two"]);
    const checks = new RecordChecks(FILE_HEADER, () => {});
    const [first, second, third] = seg.spans;
    // The records before it are not known (written before this run): noting it would skip them.
    checks.appended(1, third.start, third.end);
    expect(checks.check(1, first.start + RECORD_HEADER, 2, seg.read, seg.size, false)).toEqual(first);
    expect(seg.reads[0][0]).toBe(FILE_HEADER);
    expect(checks.check(1, second.start + RECORD_HEADER, 2, seg.read, seg.size, false)).toEqual(second);
    expect(checks.check(1, third.start + RECORD_HEADER, 2, seg.read, seg.size, false)).toEqual(third);
  });
});
