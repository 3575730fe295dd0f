import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import type { CommitPacer } from "./commit-pacer.js";
import type { SegmentCompactor } from "./segment-compactor.js";
import type { SqliteStatements } from "./sqlite-statements.js";
import type { CheckpointReply } from "./wal-checkpoint-worker.js";
import { WalCheckpointer } from "./wal-checkpointer.js";

/** A WAL file past this size is emptied (see truncateWal): it stays near this bound. */
export const WAL_TRUNCATE_BYTES = 32 * 1024 * 1024;
/**
 * A WAL file past this size is emptied at the next commit, without waiting for a passive
 * checkpoint to report it: commits keep coming while one runs, and under load it reports late.
 */
const WAL_CEILING_BYTES = 2 * WAL_TRUNCATE_BYTES;
/**
 * The WAL's size is looked at after a commit at most this often: a stat per ACK was a visible
 * share of a FETCH(1)+ACK, and what commits add in this time is far below the ceiling.
 */
const WAL_CHECK_INTERVAL_MS = 10;
/** A fully copied WAL file past this size is emptied too (cheap then: nothing is left to copy). */
const WAL_IDLE_TRUNCATE_BYTES = 4 * 1024 * 1024;
/** Free database pages are looked at this often, and given back past VACUUM_FREE_BYTES, a step at a time. */
const VACUUM_INTERVAL_MS = 1000;
const VACUUM_FREE_BYTES = 8 * 1024 * 1024;
const VACUUM_STEP_BYTES = 16 * 1024 * 1024;
/** After the worker's commits, segments are looked at this often at most (a turn of its own). */
const COLLECT_INTERVAL_MS = 1000;

/** What disk space the store holds beyond its live data. */
export interface DiskSlack {
  walBytes: number;
  dbFreeBytes: number;
}

/**
 * Keeps the embedded store's files bounded by its live data: WAL checkpoints on a worker (and
 * a truncation once the WAL grew past its bound), log segments no row needs deleted or
 * compacted, free database pages given back (incremental vacuum).
 */
export class DiskUpkeep {
  private readonly checkpointer?: WalCheckpointer;
  private truncatingWal = false;
  private lastVacuumMs = 0;
  private lastWalCheckMs = Number.NEGATIVE_INFINITY;
  private lastCollectMs = 0;
  private readonly pageSize: number;

  constructor(
    private readonly db: Database.Database,
    /** The database file; ":memory:" has no WAL, no log and no checkpoint worker. */
    private readonly file: string,
    synchronous: "NORMAL" | "FULL",
    private readonly stmt: Pick<SqliteStatements, "freePages">,
    /** Absent for an in-memory store (no log). */
    private readonly compactor: SegmentCompactor | undefined,
    private readonly pacer: CommitPacer,
    /** Databases made before the format had it have no incremental vacuum (it needs a full VACUUM to turn on). */
    private readonly incrementalVacuum: boolean,
  ) {
    this.pageSize = db.pragma("page_size", { simple: true }) as number;
    if (file === ":memory:") return;
    this.checkpointer = WalCheckpointer.start({ file, synchronous }, (reply) => this.onCheckpoint(reply));
    if (!this.checkpointer) db.pragma("wal_autocheckpoint = 1000");
  }

  /** After a commit on the store's connection: a checkpoint soon, and what the commit freed. */
  afterCommit(): void {
    this.checkpointer?.request();
    this.truncateWalPastCeiling();
    this.reclaim();
  }

  /** After a commit of the row worker: a checkpoint soon; segments once a second at most. */
  afterWorkerCommit(): void {
    this.checkpointer?.request();
    this.truncateWalPastCeiling();
    const now = Date.now();
    if (now - this.lastCollectMs < COLLECT_INTERVAL_MS) return;
    this.lastCollectMs = now;
    void this.pacer.turn(() => this.reclaim()).catch(() => {});
  }

  /** The WAL's size and the free database pages, in bytes. */
  slack(): DiskSlack {
    const walBytes = fileSize(`${this.file}-wal`);
    const dbFreeBytes = this.db.open ? this.stmt.freePages.get()!.n * this.pageSize : 0;
    return { walBytes, dbFreeBytes };
  }

  async close(): Promise<void> {
    await this.checkpointer?.close();
  }

  /**
   * Deletes (or compacts) log segments no row needs, and gives free database pages back to the
   * file system (incremental vacuum, at most once a second); call with every row committed.
   */
  private reclaim(): void {
    this.compactor?.removeUnused((change) => this.pacer.atomically(change));
    const now = Date.now();
    if (now - this.lastVacuumMs < VACUUM_INTERVAL_MS || this.db.inTransaction) return;
    this.lastVacuumMs = now;
    const free = this.stmt.freePages.get()!.n;
    if (free * this.pageSize > VACUUM_FREE_BYTES && this.incrementalVacuum) {
      this.db.pragma(`incremental_vacuum(${Math.ceil(VACUUM_STEP_BYTES / this.pageSize)})`);
    }
  }

  private onCheckpoint(reply: CheckpointReply): void {
    if (!this.db.open) return;
    if (reply.type === "failed") {
      // Without the worker, SQLite checkpoints on this connection again.
      this.db.pragma("wal_autocheckpoint = 1000");
      return;
    }
    if (reply.type !== "checkpointed") return;
    // Past the bound; or idle with everything copied (a truncation costs little then), so an
    // idle broker does not keep a large WAL file.
    const idle = reply.copiedFrames === reply.walFrames && reply.walBytes > WAL_IDLE_TRUNCATE_BYTES;
    if (idle || reply.walBytes > WAL_TRUNCATE_BYTES) this.truncateWal();
  }

  /** Writers wait while the truncation runs (see truncateWal), which is what bounds the WAL. */
  private truncateWalPastCeiling(): void {
    if (!this.checkpointer || this.truncatingWal) return;
    const now = performance.now();
    if (now - this.lastWalCheckMs < WAL_CHECK_INTERVAL_MS) return;
    this.lastWalCheckMs = now;
    if (fileSize(`${this.file}-wal`) > WAL_CEILING_BYTES) this.truncateWal();
  }

  /**
   * Empties the WAL file with a TRUNCATE checkpoint while no other connection writes: passive
   * checkpoints copy the WAL but never start it over while commits keep coming, so without
   * this it grew without bound under a stream of small commits (deletes, ACKs, expiry).
   */
  private truncateWal(): void {
    if (this.truncatingWal) return;
    const checkpointer = this.checkpointer;
    this.truncatingWal = true;
    const truncated =
      checkpointer && this.pacer.hasWorker
        ? this.pacer.exclusive(() => checkpointer.truncate())
        : this.pacer.turn(() => {
            // This connection is the only writer: settle, then truncate here.
            this.pacer.settle();
            this.db.pragma("wal_checkpoint(TRUNCATE)");
          });
    void truncated
      .catch(() => {})
      .finally(() => {
        this.truncatingWal = false;
      });
  }
}

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
