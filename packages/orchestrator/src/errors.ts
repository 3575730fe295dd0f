/** Stable codes of the orchestrator's errors, as the HTTP API returns them. */
export type OrchestratorErrorCode =
  | "UNKNOWN_TASK_TYPE"
  | "TASK_NOT_FOUND"
  | "TASK_FINISHED"
  | "TRACE_NOT_FOUND"
  | "INVALID_REQUEST"
  | "NOT_READY";

const HTTP_STATUS: Record<OrchestratorErrorCode, number> = {
  UNKNOWN_TASK_TYPE: 400,
  TASK_NOT_FOUND: 404,
  TASK_FINISHED: 409,
  TRACE_NOT_FOUND: 404,
  INVALID_REQUEST: 400,
  NOT_READY: 503,
};

/** An error a caller of the orchestrator can act on; `code` is stable, the message says what to do. */
export class OrchestratorError extends Error {
  override name = "OrchestratorError";

  constructor(
    readonly code: OrchestratorErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The HTTP status the API answers this error with. */
  get httpStatus(): number {
    return HTTP_STATUS[this.code];
  }
}
