// Errors cross the worker-thread boundary as data (the shape of Temporal's failure converter):
// what an error is travels in the failure itself, with its code, retry hint and cause chain,
// so the other side rebuilds the same class without guessing from names or message texts.
import { Mq9Error, type Mq9ErrorCode } from "@mq9/client";
import { OrchestratorError, type OrchestratorErrorCode } from "@mq9/orchestrator";

/** An error as plain, structured-clone-safe data. */
export type Failure =
  | {
      kind: "orchestrator";
      code: OrchestratorErrorCode;
      message: string;
      retryAfterSeconds?: number;
      cause?: Failure;
    }
  | { kind: "mq9"; code: Mq9ErrorCode; message: string; retryable: boolean; cause?: Failure }
  | { kind: "other"; message: string; cause?: Failure };

/** Causes deeper than this are left off: a failure stays small even for a cyclic chain. */
const MAX_CAUSES = 4;

/** An error (or anything thrown) as data. */
export function toFailure(err: unknown, depth = 0): Failure {
  const cause =
    err instanceof Error && err.cause !== undefined && depth < MAX_CAUSES
      ? toFailure(err.cause, depth + 1)
      : undefined;
  const withCause = cause === undefined ? {} : { cause };
  if (err instanceof OrchestratorError) {
    const retry = err.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: err.retryAfterSeconds };
    return { kind: "orchestrator", code: err.code, message: err.message, ...retry, ...withCause };
  }
  if (err instanceof Mq9Error) {
    return { kind: "mq9", code: err.code, message: err.message, retryable: err.retryable, ...withCause };
  }
  return { kind: "other", message: err instanceof Error ? err.message : String(err), ...withCause };
}

/** The failure as the error it was: the class and code the HTTP API maps to statuses. */
export function toError(failure: Failure): Error {
  const options = failure.cause === undefined ? undefined : { cause: toError(failure.cause) };
  switch (failure.kind) {
    case "orchestrator":
      return new OrchestratorError(failure.code, failure.message, {
        ...options,
        retryAfterSeconds: failure.retryAfterSeconds,
      });
    case "mq9":
      return new Mq9Error(failure.code, failure.message, { ...options, retryable: failure.retryable });
    case "other":
      return new Error(failure.message, options);
  }
}
