/** Stable codes of the errors raised by A2A over mq9 (JSON-RPC errors from an agent keep the SDK's classes). */
export type A2AErrorCode =
  /** No final event within the timeout; the task may still finish (see A2AClient.waitForTask). */
  | "TIMEOUT"
  /** No registered agent has that name or mailbox. */
  | "AGENT_NOT_FOUND"
  /** The registry entry carries no A2A card, so it cannot be called with A2A. */
  | "NOT_AN_A2A_AGENT"
  /** A reply that is not a JSON-RPC response of the binding. */
  | "INVALID_RESPONSE"
  /** The client or agent was closed. */
  | "CLOSED";

/** A failure of A2A over mq9 itself (not an error the agent answered with). */
export class A2AError extends Error {
  override readonly name = "A2AError";
  readonly retryable: boolean;

  constructor(
    readonly code: A2AErrorCode,
    message: string,
    options: { cause?: unknown; retryable?: boolean } = {},
  ) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? code === "TIMEOUT";
  }
}
