import type Database from "better-sqlite3";
import type { AppendedRow } from "./appended-rows.js";
import { ApplierFailed, LogApplier } from "./log-applier.js";
import type { MessageLog } from "./message-log.js";
import type { MessageRowWriter, ReplacedMessage } from "./message-row-writer.js";
import type { TransactionStatements } from "./sqlite-statements.js";
import { isOutOfSpace, StorageError } from "./storage-error.js";

/** Rows after which the open transaction is committed without waiting for the interval. */
const MAX_UNCOMMITTED_ROWS = 4096;

/** What the pacer tells the rest of the store. */
export interface CommitPacerHooks {
  /** After a commit on the store's connection. */
  afterCommit: () => void;
  /** After a commit of the row worker (its connection). */
  afterWorkerCommit: () => void;
  /** A write failed (one for lack of space makes the storage "full"). */
  onFailure: (err: unknown) => void;
  /**
   * Messages that SENDs (or due delayed messages) replaced by key, once the commit that deleted
   * them is done, on either connection: their leases end with them.
   */
  replacedCommitted: (replaced: readonly ReplacedMessage[]) => void;
}

export interface CommitPacerOptions {
  db: Database.Database;
  stmt: TransactionStatements;
  rows: MessageRowWriter;
  /** Absent for an in-memory store, which has no log and no worker. */
  log?: MessageLog;
  /** How long SENDs may wait in the log before their rows are committed. */
  commitIntervalMs: number;
  hooks: CommitPacerHooks;
}

/**
 * When the rows of SENDs reach SQLite, and who writes them: the SENDs are durable in the
 * message log once appended; their rows are handed to a worker thread (LogApplier), or, without
 * one, wait here (`pending`) in a transaction committed after the interval or by the first
 * change that must be durable at once. Every use of SQL on the store's connection runs in a
 * turn (see `turn`), so that it sees every SEND answered before it and never meets the worker's
 * lock.
 */
export class CommitPacer {
  /**
   * SENDs in the message log not yet written to SQLite (when there is no worker): written in one
   * go by the next commit or by the first turn, several rows to a statement.
   */
  private pending: AppendedRow[] = [];
  private uncommittedRows = 0;
  private commitTimer?: NodeJS.Timeout;
  /**
   * Writes the rows of logged SENDs on a worker thread; absent for an in-memory store, or
   * after the worker failed, when they are written here (see `pending`).
   */
  private applier?: LogApplier;
  /** One transaction wrapper for every change: better-sqlite3 builds a costly new one per transaction() call. */
  private readonly runAtomically: (change: () => unknown) => unknown;
  private readonly db: Database.Database;
  /** Messages replaced by key in the transaction open on this connection (see noteReplaced). */
  private replacedHere: ReplacedMessage[] = [];

  constructor(private readonly options: CommitPacerOptions) {
    this.db = options.db;
    this.runAtomically = options.db.transaction((change: () => unknown) => change());
  }

  /**
   * Hands the rows of SENDs to a worker thread from now on; when it fails, they are written
   * here again, starting with those it did not commit.
   */
  startWorker(file: string, synchronous: "NORMAL" | "FULL", onFailed?: (err: Error) => void): void {
    const { log, rows, hooks } = this.options;
    if (!log) return;
    this.applier = LogApplier.start({ file, synchronous }, log.end, {
      intervalMs: this.options.commitIntervalMs,
      maxRows: MAX_UNCOMMITTED_ROWS,
      onApplied: (released, replaced) => {
        for (const located of released) log.released(located);
        if (replaced.length > 0) hooks.replacedCommitted(replaced);
        hooks.afterWorkerCommit();
      },
      writeHere: (packed, to) =>
        this.atomically(() => {
          rows.writePacked(packed);
          log.saveApplied(to);
        }),
      onFailed: (err) => {
        this.applier = undefined;
        this.pending = log.unappliedRows();
        this.uncommittedRows = this.pending.length;
        this.scheduleSettle();
        onFailed?.(err);
      },
    });
  }

  /** Whether a worker writes the rows (another connection writes then). */
  get hasWorker(): boolean {
    return this.applier !== undefined;
  }

  /** Rows of logged SENDs the database does not hold yet. */
  get rowsWaiting(): number {
    return this.applier?.waiting ?? this.pending.length;
  }

  /** Why the worker cannot write rows right now (a full disk), if it cannot. */
  get stalledBy(): Error | undefined {
    return this.applier?.stalledBy;
  }

  /** Takes the rows of SENDs just written to the log: their rows reach SQLite within the interval. */
  appended(rows: readonly AppendedRow[]): void {
    const { log } = this.options;
    if (this.applier && log) {
      this.applier.appendedTo(log.end, rows);
      return;
    }
    for (const row of rows) this.pending.push(row);
    this.uncommittedRows += rows.length;
    if (this.uncommittedRows < MAX_UNCOMMITTED_ROWS) this.scheduleSettle();
    else {
      try {
        this.settle();
      } catch (err) {
        // The SENDs are durable in the log: their rows are written once there is room.
        this.options.hooks.onFailure(err);
        this.scheduleSettle();
      }
    }
  }

  /**
   * Runs `body`, synchronous SQL on the store's connection, once the database holds every SEND
   * so far: in a turn of the worker when there is one, else after writing the pending rows here.
   */
  turn<T>(body: () => T): Promise<T> {
    if (this.applier) {
      return this.applier.turn(body).catch((err) => {
        // The worker failed and its rows are pending here now: run the body the other way.
        if (err instanceof ApplierFailed) return this.turn(body);
        this.options.hooks.onFailure(err);
        throw err;
      });
    }
    try {
      this.applyPendingUnlessFull();
      return Promise.resolve(body());
    } catch (err) {
      this.options.hooks.onFailure(err);
      return Promise.reject(err);
    }
  }

  /**
   * Runs `work`, a write on another connection (a WAL truncation), while no one writes here or
   * on the worker: nothing is handed to the worker and no turn runs until it settles. Only with
   * a worker (see hasWorker).
   */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (!this.applier) return Promise.reject(new Error("no row worker: run the work in a turn"));
    return this.applier.exclusive(work);
  }

  /** Runs a change that is durable once this returns, committed together with pending SENDs. */
  committed<T>(change: () => T): T {
    this.applyPending();
    const sendsPending = this.db.inTransaction;
    const result = this.atomically(change);
    // Outside the deferred transaction the change committed by itself; inside it, commit it all.
    if (sendsPending) this.settle();
    else this.options.hooks.afterCommit();
    return result;
  }

  /** Runs `change` in a transaction, or in a savepoint when one is open already. */
  atomically<T>(change: () => T): T {
    const mark = this.replacedHere.length;
    let result: T;
    try {
      result = this.runAtomically(change) as T;
    } catch (err) {
      // Rolled back: what it replaced is still there.
      this.replacedHere.length = mark;
      throw err;
    }
    if (!this.db.inTransaction) this.tellReplaced();
    return result;
  }

  /**
   * Notes a message that a row written on this connection replaced by key (the row writer's
   * callback): told with replacedCommitted once its transaction commits, forgotten if it rolls back.
   */
  noteReplaced(mbox: number, msgId: number): void {
    this.replacedHere.push({ mbox, msgId });
  }

  private tellReplaced(): void {
    if (this.replacedHere.length === 0) return;
    const replaced = this.replacedHere;
    this.replacedHere = [];
    this.options.hooks.replacedCommitted(replaced);
  }

  /**
   * Lets the writes that follow join the transaction SENDs collect in (committed after the
   * interval at the latest); with the worker writing SEND rows, the store's connection holds
   * no transaction between turns, and they commit by themselves.
   */
  deferred(): void {
    if (!this.applier) this.beginDeferred();
  }

  /** Commits the open transaction, recording that the log's records are now in the database. */
  settle(): void {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    this.applyPending();
    if (!this.db.inTransaction) return;
    this.options.log?.saveApplied();
    this.options.stmt.commit.run();
    this.uncommittedRows = 0;
    this.tellReplaced();
    this.options.hooks.afterCommit();
  }

  /** Waits until the worker has committed every row, and stops it. */
  async close(): Promise<void> {
    await this.applier?.close();
  }

  /** Opens the transaction SENDs collect in, committed after the interval at the latest. */
  private beginDeferred(): void {
    if (!this.db.inTransaction) this.options.stmt.begin.run();
    this.scheduleSettle();
  }

  private scheduleSettle(): void {
    if (this.commitTimer !== undefined) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      try {
        this.settle();
      } catch {
        // The next change commits, or reports the failure to its caller.
      }
    }, this.options.commitIntervalMs);
    this.commitTimer.unref();
  }

  /** Writes the pending SENDs into the open transaction, so that SQL sees them. */
  private applyPending(): void {
    if (this.pending.length === 0) return;
    this.beginDeferred();
    const rows = this.pending;
    try {
      this.atomically(() => this.options.rows.writeAppended(rows));
    } catch (err) {
      // They stay pending (and in the log): the next commit tries again.
      throw StorageError.from(err, "cannot store the message");
    }
    this.pending = [];
  }

  /**
   * Writes the pending SENDs before a turn; when that fails for lack of space the turn runs
   * without them (its reads do not see them yet; they are durable in the log), so a full disk
   * does not stop reads.
   */
  private applyPendingUnlessFull(): void {
    try {
      this.applyPending();
    } catch (err) {
      if (!isOutOfSpace(err)) throw err;
      this.options.hooks.onFailure(err);
    }
  }
}
