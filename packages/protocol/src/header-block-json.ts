import { headerMapJson, parseHeaderBlock } from "./headers.js";
import type { JsonBytes } from "./json-bytes.js";

const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;
const QUOTE = 0x22;

/** Output of the byte path; grown when a larger block comes. */
let scratch = Buffer.allocUnsafe(2048);

/** Printable ASCII that JSON takes between quotes as it is (no quote, no backslash). */
function plain(byte: number): boolean {
  return byte >= 0x20 && byte < 0x7f && byte !== QUOTE && byte !== 0x5c;
}

function blank(byte: number): boolean {
  return byte === 0x20 || byte === 0x09;
}

/** Whether out[at, at+length) repeats one of the names written before it. */
function repeatsName(
  out: Uint8Array,
  starts: number[],
  lengths: number[],
  at: number,
  length: number,
): boolean {
  for (let n = 0; n < starts.length; n++) {
    if (lengths[n] !== length) continue;
    let k = 0;
    while (k < length && out[starts[n] + k] === out[at + k]) k++;
    if (k === length) return true;
  }
  return false;
}

/** The names written so far by plainBlockJsonInto (start and length in its output), reused. */
const starts: number[] = [];
const lengths: number[] = [];

/**
 * The JSON text of a header block written byte by byte into `out` from `at`, or -1 when the
 * block needs the general path: non-ASCII or escaped characters, a repeated name, a line
 * without CRLF. `out` must have room for `plainBlockJsonRoom(block)` bytes from `at`. Returns
 * where the text ends. Clients send plain ASCII headers, so this is the FETCH path's case.
 */
function plainBlockJsonInto(out: Uint8Array, at: number, block: Uint8Array): number {
  const n = block.length;
  let i = block.indexOf(LF);
  if (i <= 0 || block[i - 1] !== CR) return -1;
  i++;
  let w = at;
  out[w++] = 0x7b;
  starts.length = 0;
  lengths.length = 0;
  while (i < n) {
    // An empty line ends the block.
    if (block[i] === CR) {
      if (block[i + 1] === LF) break;
      return -1;
    }
    let colon = -1;
    let end = i;
    while (end < n && block[end] !== CR) {
      if (colon < 0 && block[end] === COLON) colon = end;
      end++;
    }
    if (end + 1 >= n || block[end + 1] !== LF) return -1;
    if (colon > i) {
      let nameStart = i;
      let nameEnd = colon;
      while (nameStart < nameEnd && blank(block[nameStart])) nameStart++;
      while (nameEnd > nameStart && blank(block[nameEnd - 1])) nameEnd--;
      let valueStart = colon + 1;
      let valueEnd = end;
      while (valueStart < valueEnd && blank(block[valueStart])) valueStart++;
      while (valueEnd > valueStart && blank(block[valueEnd - 1])) valueEnd--;
      if (starts.length > 0) out[w++] = 0x2c;
      out[w++] = QUOTE;
      const nameAt = w;
      for (let k = nameStart; k < nameEnd; k++) {
        const byte = block[k];
        if (!plain(byte)) return -1;
        // Names are matched case-insensitively, so the map has them lowercased.
        out[w++] = byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte;
      }
      if (repeatsName(out, starts, lengths, nameAt, w - nameAt)) return -1;
      starts.push(nameAt);
      lengths.push(w - nameAt);
      out[w++] = QUOTE;
      out[w++] = COLON;
      out[w++] = QUOTE;
      for (let k = valueStart; k < valueEnd; k++) {
        const byte = block[k];
        if (!plain(byte)) return -1;
        out[w++] = byte;
      }
      out[w++] = QUOTE;
    }
    i = end + 2;
  }
  out[w++] = 0x7d;
  return w;
}

/** Bytes plainBlockJsonInto may write for `block`: each input byte gives at most one output byte, plus 5 per line. */
function plainBlockJsonRoom(block: Uint8Array): number {
  return block.length * 3 + 8;
}

/** The JSON text of a header block on the byte path (see plainBlockJsonInto), or undefined. */
export function plainBlockJson(block: Uint8Array): string | undefined {
  if (scratch.length < plainBlockJsonRoom(block)) scratch = Buffer.allocUnsafe(plainBlockJsonRoom(block));
  const end = plainBlockJsonInto(scratch, 0, block);
  return end < 0 ? undefined : scratch.toString("latin1", 0, end);
}

/**
 * The decoded header map of a raw NATS header block as a JSON object: names
 * lowercased and values trimmed as `parseHeaderBlock` reads them, a later
 * duplicate replacing an earlier one in place.
 */
export function headerBlockJson(block: Uint8Array): string {
  return plainBlockJson(block) ?? headerMapJson(parseHeaderBlock(block));
}

/** headerBlockJson's text written into `out`, straight from the block's bytes when it is plain. */
export function writeHeaderBlockJson(out: JsonBytes, block: Uint8Array): void {
  if (!out.writeWith(plainBlockJsonRoom(block), plainBlockJsonInto, block)) {
    out.text(headerMapJson(parseHeaderBlock(block)));
  }
}
