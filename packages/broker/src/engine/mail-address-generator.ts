import { randomBytes } from "node:crypto";

const BASE32HEX = "0123456789abcdefghijklmnopqrstuv";
/** 26 base32 characters carry 130 bits. */
export const GENERATED_MAIL_ADDRESS_LENGTH = 26;

/**
 * A fresh mailbox name: 26 lowercase base32hex characters, every one from the operating system's
 * CSPRNG (130 secret bits). A generated name is a capability: whoever knows it can SEND to the
 * mailbox, and without users configured also read it, so nothing in it may be predictable — the
 * XID shape used before (a seconds prefix and a counter) left only 40 bits to guess.
 */
export function generateMailAddress(): string {
  const bytes = randomBytes(GENERATED_MAIL_ADDRESS_LENGTH);
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += BASE32HEX[bytes[i] & 31];
  return out;
}
