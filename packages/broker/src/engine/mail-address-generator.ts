import { randomBytes } from "node:crypto";

const BASE32HEX = "0123456789abcdefghijklmnopqrstuv";
let counter = randomBytes(3).readUIntBE(0, 3);

function encodeBase32Hex(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32HEX[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32HEX[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * A 20-character, time-ordered, lowercase base32hex name (XID-shaped, like
 * the reference broker's): 4 bytes of seconds, 5 random bytes, a 3-byte counter.
 */
export function generateMailAddress(nowMs = Date.now()): string {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32BE(Math.floor(nowMs / 1000) >>> 0, 0);
  randomBytes(5).copy(bytes, 4);
  counter = (counter + 1) & 0xffffff;
  bytes.writeUIntBE(counter, 9, 3);
  return encodeBase32Hex(bytes);
}
