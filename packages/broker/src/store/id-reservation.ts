import type Database from "better-sqlite3";

/** How far past the next id the stored reservation is raised: the most an unclean restart skips. */
export const ID_RESERVATION = 1_000_000;

/**
 * Keeps msg_ids from being handed out twice when the tail of the message log
 * is lost (a torn write, a power loss with sync normal, a file cut short):
 * the rows of those SENDs never reached the database, so the newest row does
 * not say which ids they had. The database holds a reservation, an id above
 * every id handed out, raised (and committed) before ids past it are given;
 * a start after a crash continues from the reservation. A clean close records
 * the exact next id instead, so ids run on without a gap after a restart.
 */
export class IdReservation {
  /** Ids below this may be handed out in this run: a reservation that is committed. */
  private committedUntil = 0;
  private readonly read;
  private readonly save;
  private readonly forget;

  constructor(db: Database.Database) {
    this.read = db.prepare<[string], { value: number }>("SELECT value FROM meta WHERE name = ?");
    this.save = db.prepare(
      "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    );
    this.forget = db.prepare("DELETE FROM meta WHERE name = ?");
  }

  /**
   * The id to continue from, given the lowest one the rows allow (`known`): after a clean
   * close exactly where it stopped, else from the stored reservation.
   */
  startingId(known: number): number {
    const clean = this.read.get("clean_next_id")?.value;
    if (clean !== undefined) return Math.max(clean, known);
    return Math.max(known, this.read.get("ids_reserved")?.value ?? 0);
  }

  /** Whether `count` more ids from `next` are covered by a committed reservation. */
  covers(next: number, count: number): boolean {
    return next + count <= this.committedUntil;
  }

  /** Whether the reservation should be raised soon (half of it is used). */
  runningLow(next: number): boolean {
    return next > this.committedUntil - ID_RESERVATION / 2;
  }

  /**
   * Writes a reservation above `next` and forgets the clean-close mark; call in a transaction,
   * then `raised` once it is committed.
   */
  raise(next: number): number {
    const until = next + ID_RESERVATION;
    this.save.run("ids_reserved", until);
    this.forget.run("clean_next_id");
    return until;
  }

  raised(until: number): void {
    if (until > this.committedUntil) this.committedUntil = until;
  }

  /** Records, at a clean close with every row committed, the exact id the next start continues from. */
  markClean(next: number): void {
    this.save.run("clean_next_id", next);
  }
}
