import { Errors } from "./errors.js";

export const MAIL_ADDRESS_MAX_LENGTH = 128;

const allowedChars = /^[a-z0-9.]+$/;
const alnum = /[a-z0-9]/;

/**
 * Checks a mailbox name against the mq9 rules (lowercase letters, digits and
 * single dots, 1-128 characters, starting and ending with a letter or digit).
 * Returns the error text for the first broken rule, or `undefined` when valid.
 */
export function mailAddressError(name: string): string | undefined {
  if (name.length === 0) return Errors.emptyName;
  if (!allowedChars.test(name)) return Errors.badNameChars;
  if (!alnum.test(name[0]) || !alnum.test(name[name.length - 1])) return Errors.badNameEnds;
  if (name.length > MAIL_ADDRESS_MAX_LENGTH) return Errors.nameTooLong;
  if (name.includes("..")) return Errors.consecutiveDots;
  return undefined;
}

export function isValidMailAddress(name: string): boolean {
  return mailAddressError(name) === undefined;
}
