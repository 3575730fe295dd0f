/**
 * The number of live registrations, kept between changes instead of counted
 * again for every DISCOVER (each ranked answer carries `total`, and a count
 * walks every registration). A count taken at `takenAt` holds until the
 * earliest expiry among the registrations it counted; registering, removing
 * and renewing adjust it. A registration is counted when it was live at
 * `takenAt`, that is when it never expires or expires after it.
 */
export class LiveCount {
  private count = 0;
  /** When the count was taken; +Infinity while there is none. */
  private takenAt = Number.POSITIVE_INFINITY;
  /** The count holds for times before this. */
  private validUntil = Number.NEGATIVE_INFINITY;

  /** The count at `nowMs`, or undefined when it must be taken again (see `taken`). */
  at(nowMs: number): number | undefined {
    return nowMs >= this.takenAt && nowMs < this.validUntil ? this.count : undefined;
  }

  /** Records a count taken at `nowMs`; `earliestExpiry` is the soonest expiry among those counted. */
  taken(count: number, nowMs: number, earliestExpiry: number): void {
    this.count = count;
    this.takenAt = nowMs;
    this.validUntil = earliestExpiry;
  }

  /** A registration expiring at `expiresMs` (null: never) came in. */
  added(expiresMs: number | null): void {
    if (!this.counts(expiresMs)) return;
    this.count++;
    if (expiresMs !== null && expiresMs < this.validUntil) this.validUntil = expiresMs;
  }

  /** A registration expiring at `expiresMs` (null: never) went away. */
  removed(expiresMs: number | null): void {
    if (this.counts(expiresMs)) this.count--;
  }

  /** A registration's expiry moved (a heartbeat). */
  renewed(before: number | null, after: number | null): void {
    this.removed(before);
    this.added(after);
  }

  private counts(expiresMs: number | null): boolean {
    return expiresMs === null || expiresMs > this.takenAt;
  }
}
