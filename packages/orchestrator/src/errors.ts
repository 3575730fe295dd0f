/** Stable codes of the orchestrator's errors, as the HTTP API returns them. */
export type OrchestratorErrorCode =
  | "UNKNOWN_TASK_TYPE"
  | "TASK_NOT_FOUND"
  | "TASK_FINISHED"
  | "TRACE_NOT_FOUND"
  | "INVALID_REQUEST"
  | "NOT_READY"
  | "QUEUE_FULL";

const HTTP_STATUS: Record<OrchestratorErrorCode, number> = {
  // The request is well formed; what it names is not there (as a task id that is not there).
  UNKNOWN_TASK_TYPE: 404,
  TASK_NOT_FOUND: 404,
  TASK_FINISHED: 409,
  TRACE_NOT_FOUND: 404,
  INVALID_REQUEST: 400,
  NOT_READY: 503,
  QUEUE_FULL: 429,
};

/** An error a caller of the orchestrator can act on; `code` is stable, the message says what to do. */
export class OrchestratorError extends Error {
  override name = "OrchestratorError";

  constructor(
    readonly code: OrchestratorErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  /** With QUEUE_FULL: when trying again makes sense (the HTTP API sends it as Retry-After). */
  readonly retryAfterSeconds?: number;

  /** The HTTP status the API answers this error with. */
  get httpStatus(): number {
    return HTTP_STATUS[this.code];
  }
}
