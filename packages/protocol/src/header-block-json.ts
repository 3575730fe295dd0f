import { headerMapJson, parseHeaderBlock } from "./headers.js";

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
function repeatsName(out: Buffer, starts: number[], lengths: number[], at: number, length: number): boolean {
  for (let n = 0; n < starts.length; n++) {
    if (lengths[n] !== length) continue;
    let k = 0;
    while (k < length && out[starts[n] + k] === out[at + k]) k++;
    if (k === length) return true;
  }
  return false;
}

/**
 * The JSON text of a header block written byte by byte, or undefined when the block
 * needs the general path: non-ASCII or escaped characters, a repeated name, a line
 * without CRLF. Clients send plain ASCII headers, so this is the FETCH path's case.
 */
export function plainBlockJson(block: Uint8Array): string | undefined {
  const n = block.length;
  // Each input byte gives at most one output byte, plus 5 per line (quotes, colon, comma).
  if (scratch.length < n * 3 + 8) scratch = Buffer.allocUnsafe(n * 3 + 8);
  const out = scratch;
  let i = block.indexOf(LF);
  if (i <= 0 || block[i - 1] !== CR) return undefined;
  i++;
  let w = 0;
  out[w++] = 0x7b;
  const starts: number[] = [];
  const lengths: number[] = [];
  while (i < n) {
    // An empty line ends the block.
    if (block[i] === CR) {
      if (block[i + 1] === LF) break;
      return undefined;
    }
    let colon = -1;
    let end = i;
    while (end < n && block[end] !== CR) {
      if (colon < 0 && block[end] === COLON) colon = end;
      end++;
    }
    if (end + 1 >= n || block[end + 1] !== LF) return undefined;
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
        if (!plain(byte)) return undefined;
        // Names are matched case-insensitively, so the map has them lowercased.
        out[w++] = byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte;
      }
      if (repeatsName(out, starts, lengths, nameAt, w - nameAt)) return undefined;
      starts.push(nameAt);
      lengths.push(w - nameAt);
      out[w++] = QUOTE;
      out[w++] = COLON;
      out[w++] = QUOTE;
      for (let k = valueStart; k < valueEnd; k++) {
        const byte = block[k];
        if (!plain(byte)) return undefined;
        out[w++] = byte;
      }
      out[w++] = QUOTE;
    }
    i = end + 2;
  }
  out[w++] = 0x7d;
  return out.toString("latin1", 0, w);
}

/**
 * The decoded header map of a raw NATS header block as a JSON object: names
 * lowercased and values trimmed as `parseHeaderBlock` reads them, a later
 * duplicate replacing an earlier one in place.
 */
export function headerBlockJson(block: Uint8Array): string {
  return plainBlockJson(block) ?? headerMapJson(parseHeaderBlock(block));
}
