import { Mq9Error, type Mq9ErrorCode } from "@mq9/protocol";

/** HTTP statuses of the mq9 error codes: the REST API answers with the protocol's own error texts. */
const STATUS_OF_CODE: Partial<Record<Mq9ErrorCode, number>> = {
  MAILBOX_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  GROUP_NOT_FOUND: 404,
  AGENT_NOT_FOUND: 404,
  MAILBOX_EXISTS: 409,
  INVALID_NAME: 400,
  INVALID_REQUEST: 400,
  UNKNOWN_SUBJECT: 404,
  PERMISSION_DENIED: 403,
  TIMEOUT: 504,
  NOT_CONNECTED: 503,
  INTERNAL: 500,
};

/** A failure of a REST call: the HTTP status, a stable code and the text a person reads. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** An mq9 error text (a reply's `error`) as the REST API answers it. */
  static fromMq9(err: Mq9Error): ApiError {
    return new ApiError(STATUS_OF_CODE[err.code] ?? 400, err.code, err.message);
  }

  static from(err: unknown): ApiError {
    if (err instanceof ApiError) return err;
    if (err instanceof Mq9Error) return ApiError.fromMq9(err);
    return new ApiError(500, "INTERNAL", `internal error: ${(err as Error)?.message ?? String(err)}`);
  }
}
