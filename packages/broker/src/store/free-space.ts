import { statfsSync } from "node:fs";

/**
 * Keeps the message log from taking the last free bytes of the file system:
 * SENDs are refused while less than `reserve` bytes are free, so the rows of
 * the SENDs already acknowledged (and the WAL, and a checkpoint) still fit in
 * SQLite. The file system is asked again whenever the bytes written since
 * could have eaten into the reserve, so the check costs a subtraction per
 * write most of the time.
 */
export class FreeSpace {
  private knownFree = Number.POSITIVE_INFINITY;
  private writtenSince = 0;

  constructor(
    private readonly dir: string,
    readonly reserve: number,
  ) {
    this.refresh();
  }

  /** Whether `bytes` more may be written without going below the reserve. */
  allows(bytes: number): boolean {
    if (this.knownFree - this.writtenSince - bytes >= this.reserve * 2) {
      this.writtenSince += bytes;
      return true;
    }
    this.refresh();
    if (this.knownFree - bytes < this.reserve) return false;
    this.writtenSince = bytes;
    return true;
  }

  /** Free bytes now (asks the file system). */
  free(): number {
    this.refresh();
    return this.knownFree;
  }

  private refresh(): void {
    try {
      const stats = statfsSync(this.dir);
      this.knownFree = stats.bavail * stats.bsize;
    } catch {
      this.knownFree = Number.POSITIVE_INFINITY;
    }
    this.writtenSince = 0;
  }
}
