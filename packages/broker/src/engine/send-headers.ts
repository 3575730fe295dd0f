import { Headers, parseHeaderBlock } from "@mq9/protocol";

/** The headers SEND interprets; every other header is stored, never read. */
const OPTION_NAMES = [
  Headers.priority,
  Headers.key,
  Headers.delay,
  Headers.ttl,
  Headers.tags,
  Headers.idempotencyKey,
  Headers.natsMsgId,
];
const OPTION_BYTES = OPTION_NAMES.map((name) => Buffer.from(name, "latin1"));

const CR = 0x0d;
const LF = 0x0a;

/** Text of an ASCII byte range (values are short: no decoder call needed). */
function latin1(block: Uint8Array, start: number, end: number): string {
  let text = "";
  for (let i = start; i < end; i++) text += String.fromCharCode(block[i]);
  return text;
}

/** JavaScript's String.prototype.trim, within ASCII: tab, LF, VT, FF, CR and space. */
function blank(byte: number): boolean {
  return byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);
}

function lowerAscii(byte: number): number {
  return byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte;
}

/** The option name block[start, end) spells, in any case, or undefined. */
function optionAt(block: Uint8Array, start: number, end: number): string | undefined {
  for (let o = 0; o < OPTION_BYTES.length; o++) {
    const name = OPTION_BYTES[o];
    if (name.length !== end - start) continue;
    let k = 0;
    while (k < name.length && lowerAscii(block[start + k]) === name[k]) k++;
    if (k === name.length) return OPTION_NAMES[o];
  }
  return undefined;
}

function optionsOf(all: Map<string, string>): Map<string, string> {
  return new Map([...all].filter(([name]) => (OPTION_NAMES as string[]).includes(name)));
}

/**
 * The SEND options among a header block's headers (`mq9-priority`, `mq9-key`,
 * `mq9-delay`, `mq9-ttl`, `mq9-tags`, `mq9-idempotency-key`, `nats-msg-id`), read as `parseHeaderBlock` reads them.
 * An ASCII block is scanned in place and only those headers become strings;
 * a SEND carries many other headers (A2A, the orchestrator's envelope) that the
 * broker only stores.
 */
export function readSendHeaders(block: Uint8Array): Map<string, string> {
  for (let i = 0; i < block.length; i++) {
    if (block[i] >= 0x80) return optionsOf(parseHeaderBlock(block));
  }
  const headers = new Map<string, string>();
  const n = block.length;
  // Lines end at CRLF (a lone CR or LF is part of a line); the first is the version line.
  let start = 0;
  while (start < n - 1 && !(block[start] === CR && block[start + 1] === LF)) start++;
  if (start >= n - 1) return headers;
  start += 2;
  while (start < n) {
    let end = start;
    let colon = -1;
    while (end < n && !(block[end] === CR && block[end + 1] === LF)) {
      if (colon < 0 && block[end] === 0x3a) colon = end;
      end++;
    }
    if (end === start) break;
    if (colon > start) {
      let nameStart = start;
      let nameEnd = colon;
      while (nameStart < nameEnd && blank(block[nameStart])) nameStart++;
      while (nameEnd > nameStart && blank(block[nameEnd - 1])) nameEnd--;
      const name = optionAt(block, nameStart, nameEnd);
      if (name !== undefined) headers.set(name, latin1(block, colon + 1, end).trim());
    }
    start = end + 2;
  }
  return headers;
}
