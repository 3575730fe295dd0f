import { FreeSpace } from "./free-space.js";
import { isOutOfSpace } from "./storage-error.js";

/** Whether the store can write: "full" while writes fail for lack of space. */
export type StorageState = "ok" | "full";

/** How long a write that failed for lack of space keeps the state "full" (unless another fails). */
const SPACE_SHORT_MS = 5_000;

/**
 * Whether the embedded store has room to write: the free space a SEND must leave to SQLite,
 * and the writes that failed for lack of space lately.
 */
export class StorageHealth {
  /** When a write last failed for lack of space; cleared once there is room again. */
  private spaceShortSinceMs?: number;
  private readonly freeSpace?: FreeSpace;

  /** `dataDir` undefined: an in-memory store, which is never short of disk. */
  constructor(dataDir: string | undefined, reserveBytes: number) {
    if (dataDir !== undefined) this.freeSpace = new FreeSpace(dataDir, reserveBytes);
  }

  /** Throws ENOSPC when writing `bytes` to the log would leave less than the reserve. */
  checkRoomFor(bytes: number): void {
    const space = this.freeSpace;
    if (!space || space.allows(bytes)) return;
    const err = new Error(
      `ENOSPC: less than ${Math.round(space.reserve / 2 ** 20)} MiB free, kept for the database`,
    ) as Error & { code: string };
    err.code = "ENOSPC";
    throw err;
  }

  /**
   * "full" while less than the reserve is free (SENDs are refused), while the row worker cannot
   * write (`workerStalled`), or for a few seconds after a write failed for lack of space (a
   * quota or a file-size limit the free space does not show); "ok" otherwise.
   */
  state(workerStalled: boolean): StorageState {
    if (this.freeSpace && this.freeSpace.free() < this.freeSpace.reserve) return "full";
    if (workerStalled) return "full";
    const since = this.spaceShortSinceMs;
    if (since !== undefined && Date.now() - since < SPACE_SHORT_MS) return "full";
    this.spaceShortSinceMs = undefined;
    return "ok";
  }

  /** Notes a failed write: one for lack of space makes the state "full". */
  readonly noteFailure = (err: unknown): void => {
    if (isOutOfSpace(err) || isOutOfSpace((err as { cause?: unknown }).cause))
      this.spaceShortSinceMs = Date.now();
  };
}
