/** A failure of the storage backend, mapped to one class with a stable code. */
export class StorageError extends Error {
  readonly code: string;

  constructor(message: string, code = "STORAGE_FAILED", options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StorageError";
    this.code = code;
  }

  /** Maps a backend error to ours, saying what to do where we know. */
  static from(err: unknown, context: string): StorageError {
    if (err instanceof StorageError)
      return new StorageError(`${context}: ${err.message}`, err.code, { cause: err });
    const code = (err as { code?: string }).code ?? "";
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
      return new StorageError(
        `${context}: it is in use by another mq9 broker; stop that one or pick another --data directory`,
        "STORE_LOCKED",
        { cause: err },
      );
    }
    if (isOutOfSpace(err)) {
      return new StorageError(
        `${context}: the disk holding the data directory is full (${code}); free some space and the broker carries on by itself`,
        "STORE_FULL",
        { cause: err },
      );
    }
    if (
      code === "SQLITE_CANTOPEN" ||
      code === "SQLITE_READONLY" ||
      code === "EACCES" ||
      code === "EROFS" ||
      code === "ENOTDIR" ||
      code === "EEXIST"
    ) {
      return new StorageError(
        `${context}: the directory is not writable; check its permissions or pick another --data directory`,
        "STORE_NOT_WRITABLE",
        { cause: err },
      );
    }
    return new StorageError(`${context}: ${(err as Error).message}`, "STORAGE_FAILED", { cause: err });
  }
}

/** The code of a StorageError for a commit whose outcome is not known (see isOutcomeUnknown). */
export const OUTCOME_UNKNOWN = "STORE_OUTCOME_UNKNOWN";

/**
 * Whether a write failed after its commit was sent and no answer came back (the database's
 * connection was lost): it may have been stored. Only an idempotency key makes a retry safe.
 */
export function isOutcomeUnknown(err: unknown): boolean {
  return err instanceof StorageError && err.code === OUTCOME_UNKNOWN;
}

const OUT_OF_SPACE = new Set(["ENOSPC", "EFBIG", "EDQUOT", "SQLITE_FULL", "STORE_FULL"]);

/** Whether a write failed for lack of space (a full disk, a quota, a file-size limit). */
export function isOutOfSpace(err: unknown): boolean {
  for (let at: unknown = err; at; at = (at as { cause?: unknown }).cause) {
    if (OUT_OF_SPACE.has((at as { code?: string }).code ?? "")) return true;
  }
  return false;
}
