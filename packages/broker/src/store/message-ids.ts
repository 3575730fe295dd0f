import type Database from "better-sqlite3";
import type { CommitPacer } from "./commit-pacer.js";
import { IdReservation } from "./id-reservation.js";
import type { MessageStatements } from "./sqlite-statements.js";
import { StorageError } from "./storage-error.js";

/** More messages than one append is ever given (SendBatcher's largest batch). */
const MAX_BATCH = 65_536;

/**
 * The msg_id sequence of the embedded store (one for all mailboxes): the id the next message
 * gets, and the committed reservation ahead of it (see IdReservation) that keeps ids from
 * being reused after a crash.
 */
export class MessageIds {
  /** The id the next stored message gets. */
  private nextId: number;
  private readonly reservation: IdReservation;
  private reserving?: Promise<void>;

  constructor(
    db: Database.Database,
    stmt: Pick<MessageStatements, "newestId" | "storedNextId">,
    private readonly pacer: CommitPacer,
    private readonly onFailure: (err: unknown) => void,
  ) {
    this.reservation = new IdReservation(db);
    const stored = stmt.storedNextId.get()?.value ?? 0;
    const newest = stmt.newestId.get()?.id ?? -1;
    this.nextId = this.reservation.startingId(Math.max(stored, newest + 1));
    try {
      this.reserveNow();
    } catch (err) {
      // Nothing is given an id until a reservation is committed (the first SEND tries again).
      onFailure(err);
    }
  }

  /** The id the next message gets. */
  get next(): number {
    return this.nextId;
  }

  /** Waits until `count` ids from the next one are covered by a committed reservation. */
  async ensure(count: number): Promise<void> {
    while (!this.covered(count)) await this.reserve();
  }

  /**
   * Whether `count` ids from the next one are covered by a committed reservation now (the usual
   * case: then no wait is needed); raises the reservation in the background when it runs low.
   */
  covered(count: number): boolean {
    if (!this.reservation.covers(this.nextId, count)) return false;
    if (this.reservation.runningLow(this.nextId)) void this.reserve().catch(() => {});
    return true;
  }

  /** Moves the sequence on to `next`, once the messages given the ids below it are stored. */
  advanceTo(next: number): void {
    this.nextId = next;
  }

  /** Records, with every row committed, the exact id the next start continues from. */
  markClean(): void {
    this.reservation.markClean(this.nextId);
  }

  /** Raises the stored reservation in a turn; one raise at a time. */
  private reserve(): Promise<void> {
    this.reserving ??= this.pacer
      .turn(() => this.reserveNow())
      .catch((err) => {
        this.onFailure(err);
        throw StorageError.from(err, "cannot store the message");
      })
      .finally(() => {
        this.reserving = undefined;
      });
    return this.reserving;
  }

  /** Commits a reservation of ids well past the next one (call in a turn). */
  private reserveNow(): void {
    // Past what one append may take at once, so a raise always covers the batch that waited for it.
    const until = this.pacer.committed(() => this.reservation.raise(this.nextId + MAX_BATCH));
    this.reservation.raised(until);
  }
}
