/** Stable codes for everything that can go wrong in an mq9 call. */
export type Mq9ErrorCode =
  | "MAILBOX_NOT_FOUND"
  | "MAILBOX_EXISTS"
  | "INVALID_NAME"
  | "INVALID_REQUEST"
  | "MESSAGE_NOT_FOUND"
  | "UNKNOWN_SUBJECT"
  | "AGENT_NOT_FOUND"
  | "PERMISSION_DENIED"
  | "TIMEOUT"
  | "NOT_CONNECTED"
  | "INTERNAL";

const codeByText: [RegExp, Mq9ErrorCode][] = [
  [/^mailbox .* does not exist$/, "MAILBOX_NOT_FOUND"],
  [/^mailbox .* already exists$/, "MAILBOX_EXISTS"],
  [/^(prefix must|name may only|mail_address must)/, "INVALID_NAME"],
  [/^message not found$/, "MESSAGE_NOT_FOUND"],
  [/^unrecognized mq9 subject/, "UNKNOWN_SUBJECT"],
  [/^agent not found$/, "AGENT_NOT_FOUND"],
  [/^permission denied/, "PERMISSION_DENIED"],
  [/^internal error/, "INTERNAL"],
];

/** The code a broker's error text stands for; INVALID_REQUEST for the rest. */
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
      options?.retryable ?? (code === "TIMEOUT" || code === "NOT_CONNECTED" || code === "INTERNAL");
  }

  /** Builds the error a reply's `error` text describes. */
  static fromReply(text: string): Mq9Error {
    return new Mq9Error(codeForErrorText(text), text);
  }
}
