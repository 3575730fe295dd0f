/**
 * JSON written straight into bytes: known-ASCII pieces copied as they are, base64 written from
 * the payload's bytes, other text as UTF-8. A long reply built this way costs no string
 * concatenation, flattening or UTF-8 measuring, which string pieces would.
 */
/** Text up to this long is copied by a loop in JavaScript, longer text by Buffer.write. */
const SHORT_TEXT = 24;

const MAX_UINT32 = 0xffff_ffff;

/** The ASCII digits of 0 to 99, two bytes each ("00", "01", … "99"). */
const DIGIT_PAIRS = Uint8Array.from({ length: 200 }, (_, i) =>
  i % 2 === 0 ? 48 + Math.floor(i / 20) : 48 + ((i >> 1) % 10),
);

/** How many decimal digits a 32-bit whole number has. */
function digitCount(value: number): number {
  if (value < 100_000) return value < 10 ? 1 : value < 100 ? 2 : value < 1000 ? 3 : value < 10_000 ? 4 : 5;
  return value < 1e6 ? 6 : value < 1e7 ? 7 : value < 1e8 ? 8 : value < 1e9 ? 9 : 10;
}

export class JsonBytes {
  private buf: Buffer;
  private at = 0;

  constructor(sizeHint: number) {
    this.buf = Buffer.allocUnsafe(Math.max(sizeHint, 64));
  }

  /** Text known to be ASCII (numbers, field names, base64): one byte per character. */
  ascii(text: string): void {
    this.room(text.length);
    // A field name is copied here: a call into C++ per piece costs more than the loop.
    if (text.length <= SHORT_TEXT) {
      const buf = this.buf;
      let at = this.at;
      for (let i = 0; i < text.length; i++) buf[at++] = text.charCodeAt(i);
      this.at = at;
      return;
    }
    this.at += this.buf.write(text, this.at, "latin1");
  }

  /** A whole number as JSON, its digits written without a string made for them. */
  integer(value: number): void {
    // Ids, lengths, counts and Unix seconds fit 32 bits: digits two at a time in integer arithmetic.
    if (value >= 0 && value <= MAX_UINT32 && Number.isInteger(value)) {
      let rest = value >>> 0;
      const digits = digitCount(rest);
      this.room(digits);
      const buf = this.buf;
      let i = this.at + digits;
      while (rest >= 100) {
        const quotient = (rest / 100) >>> 0;
        const pair = (rest - quotient * 100) << 1;
        buf[--i] = DIGIT_PAIRS[pair + 1];
        buf[--i] = DIGIT_PAIRS[pair];
        rest = quotient;
      }
      if (rest >= 10) {
        buf[--i] = DIGIT_PAIRS[(rest << 1) + 1];
        buf[--i] = DIGIT_PAIRS[rest << 1];
      } else {
        buf[--i] = 48 + rest;
      }
      this.at += digits;
      return;
    }
    if (!Number.isSafeInteger(value) || value < 0) {
      this.ascii(String(value));
      return;
    }
    let digits = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    this.room(digits);
    const buf = this.buf;
    let rest = value;
    for (let i = this.at + digits - 1; i >= this.at; i--) {
      buf[i] = 48 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    this.at += digits;
  }

  /** Bytes as a JSON array of numbers (`[78,65]`), written digit by digit. */
  byteList(bytes: Uint8Array): void {
    this.room(bytes.length * 4 + 2);
    const buf = this.buf;
    let at = this.at;
    buf[at++] = 0x5b;
    for (let i = 0; i < bytes.length; i++) {
      if (i > 0) buf[at++] = 0x2c;
      const byte = bytes[i];
      if (byte >= 100) buf[at++] = 48 + Math.floor(byte / 100);
      if (byte >= 10) buf[at++] = 48 + (Math.floor(byte / 10) % 10);
      buf[at++] = 48 + (byte % 10);
    }
    buf[at++] = 0x5d;
    this.at = at;
  }

  /**
   * Lets `write` put up to `room` bytes in place: it gets the writer's memory and where to start,
   * and returns where it stopped, or -1 to write nothing. Returns whether it wrote.
   */
  writeWith<A>(room: number, write: (out: Buffer, at: number, arg: A) => number, arg: A): boolean {
    this.room(room);
    const end = write(this.buf, this.at, arg);
    if (end < 0) return false;
    this.at = end;
    return true;
  }

  /** Any text, as UTF-8 (at most three bytes per UTF-16 unit). */
  text(text: string): void {
    this.room(text.length * 3);
    this.at += this.buf.write(text, this.at, "utf8");
  }

  /** Bytes as base64, without quotes. */
  base64(bytes: Uint8Array): void {
    const view = Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.ascii(view.toString("base64"));
  }

  /** What was written (a view of the writer's memory: write nothing more afterwards). */
  done(): Buffer {
    return this.buf.subarray(0, this.at);
  }

  private room(extra: number): void {
    if (this.at + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.at + extra) size *= 2;
    const bigger = Buffer.allocUnsafe(size);
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }
}
