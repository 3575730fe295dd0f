/** Every stable code of an mq9 failure, in no particular order. */
export const MQ9_ERROR_CODES = [
  "MAILBOX_NOT_FOUND",
  "MAILBOX_EXISTS",
  "INVALID_NAME",
  "INVALID_REQUEST",
  "MESSAGE_NOT_FOUND",
  "GROUP_NOT_FOUND",
  "UNKNOWN_SUBJECT",
  "AGENT_NOT_FOUND",
  "PERMISSION_DENIED",
  "OUTCOME_UNKNOWN",
  "TIMEOUT",
  "NOT_CONNECTED",
  "INTERNAL",
] as const;

/** Stable codes for everything that can go wrong in an mq9 call. */
export type Mq9ErrorCode = (typeof MQ9_ERROR_CODES)[number];

const knownCodes: ReadonlySet<string> = new Set(MQ9_ERROR_CODES);

/** Whether `value` is one of the codes this version knows. */
export function isMq9ErrorCode(value: unknown): value is Mq9ErrorCode {
  return typeof value === "string" && knownCodes.has(value);
}

const codeByText: [RegExp, Mq9ErrorCode][] = [
  [/^mailbox .* does not exist$/, "MAILBOX_NOT_FOUND"],
  [/^mailbox .* already exists$/, "MAILBOX_EXISTS"],
  [/^(prefix must|name may only|mail_address must)/, "INVALID_NAME"],
  [/^message not found(:.*)?$/, "MESSAGE_NOT_FOUND"],
  [/^group .* of mailbox .* does not exist/, "GROUP_NOT_FOUND"],
  [/^unrecognized mq9 subject/, "UNKNOWN_SUBJECT"],
  [/^agent not found$/, "AGENT_NOT_FOUND"],
  [/^permission denied/, "PERMISSION_DENIED"],
  [/^outcome unknown/, "OUTCOME_UNKNOWN"],
  [/^internal error/, "INTERNAL"],
];

/**
 * The code a broker's error text stands for; INVALID_REQUEST for the rest. Only the fallback for
 * replies without a `code` (brokers that do not send the mq9 extension).
 */
export function codeForErrorText(text: string): Mq9ErrorCode {
  for (const [pattern, code] of codeByText) if (pattern.test(text)) return code;
  return "INVALID_REQUEST";
}

/**
 * An mq9 failure. `message` is the text the broker puts in a reply's `error`
 * field; `retryable` says whether the same call may succeed later.
 */
export class Mq9Error extends Error {
  readonly code: Mq9ErrorCode;
  readonly retryable: boolean;

  constructor(code: Mq9ErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options);
    this.name = "Mq9Error";
    this.code = code;
    this.retryable =
      options?.retryable ??
      (code === "TIMEOUT" || code === "NOT_CONNECTED" || code === "INTERNAL" || code === "OUTCOME_UNKNOWN");
  }

  /**
   * Builds the error an error reply describes: its `code` where the broker sent a known one,
   * else the code its `error` text stands for.
   */
  static fromReply(text: string, code?: unknown): Mq9Error {
    return new Mq9Error(isMq9ErrorCode(code) ? code : codeForErrorText(text), text);
  }
}
