import { Worker } from "node:worker_threads";
import { compiledWorkerUrl } from "../compiled-worker.js";
import type { AppendedRow, SpanLocation } from "./appended-rows.js";
import type { ApplyReply, ApplyRequest, ApplyWorkerData } from "./log-apply-worker.js";
import type { ReplacedMessage } from "./message-row-writer.js";
import { type PackedRows, PendingRows } from "./packed-rows.js";
import type { LogPosition } from "./segment-log.js";

/** How long rows the worker could not write for lack of space wait before it tries again. */
const STALL_RETRY_MS = 1000;
/** At most this many rows a turn waits for are written on the calling thread instead of the worker. */
const WRITE_HERE_ROWS = 32;

/** A turn that did not run because the worker failed: the caller runs it another way. */
export class ApplierFailed extends Error {
  constructor() {
    super("the log apply worker failed");
  }
}

interface Turn {
  /** Rows that must be in the database before the body runs. */
  need: number;
  body: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface LogApplierOptions {
  /** Longest a SEND waits in the log before a worker writes its row (unless a request needs it sooner). */
  intervalMs: number;
  /** Rows after which they are handed over without waiting for the interval. */
  maxRows: number;
  /**
   * After each commit of the worker, with the messages that SENDs with their keys replaced and
   * where their bytes were in the log.
   */
  onApplied: (released: SpanLocation[], replaced: ReplacedMessage[]) => void;
  /** The worker failed; turns not run yet are rejected with ApplierFailed. */
  onFailed: (err: Error) => void;
  /** The worker could not write for lack of space; it tries again later. */
  onStalled?: (err: Error) => void;
  /**
   * Writes rows on the calling thread, with the log position they end at, in one transaction
   * (only while the worker is idle): for the few rows a turn waits for.
   */
  writeHere: (rows: PackedRows, to: LogPosition) => void;
}

/**
 * Has a worker thread write the rows of logged SENDs into SQLite, and lets
 * the broker's own connection use SQL only in turns: when every SEND before
 * the turn was asked for is in the database and the worker is idle. One
 * writer at a time, so neither waits on SQLite's lock, and a read always sees
 * the SENDs answered before it.
 */
export class LogApplier {
  /** Rows appended to the log, handed to the worker, and committed by it. */
  private appended = 0;
  private handedOver = 0;
  private applied = 0;
  private end: LogPosition;
  private busy = false;
  /**
   * Whether the worker has started (loaded and opened its connection, which takes a while on a
   * busy machine): until then nothing is handed to it, so requests meanwhile never wait for its
   * start-up; turns write the few rows they need here (see catchUpHere).
   */
  private workerStarted = false;
  /** Set while onReply runs the queued turns: no hand-over may start under them. */
  private runningTurns = false;
  /** Set while an exclusive piece of work runs: no hand-over, no turn. */
  private held = false;
  /** Why the worker could not write the last rows (a full disk); cleared once it writes again. */
  private stalled?: Error;
  private stalledAtMs = 0;
  private failed = false;
  private readonly turns: Turn[] = [];
  /** Rows appended since the last hand-over. */
  private readonly unhanded = new PendingRows();
  private timer?: NodeJS.Timeout;
  private closing?: Promise<void>;

  private constructor(
    private readonly worker: Worker,
    start: LogPosition,
    private readonly options: LogApplierOptions,
  ) {
    this.end = start;
    worker.on("message", (reply: ApplyReply) => this.onReply(reply));
    worker.on("error", (err) => this.fail(err));
    worker.on("exit", () => {
      if (this.closing === undefined) this.fail(new Error("the log apply worker exited"));
    });
    worker.unref();
  }

  /** Undefined when the worker's code is missing (run the build): the store writes rows itself then. */
  static start(
    data: ApplyWorkerData,
    start: LogPosition,
    options: LogApplierOptions,
  ): LogApplier | undefined {
    const url = compiledWorkerUrl("store/log-apply-worker.js");
    if (!url) return undefined;
    return new LogApplier(new Worker(url, { workerData: data }), start, options);
  }

  /** Rows of logged SENDs the database does not hold yet. */
  get waiting(): number {
    return this.appended - this.applied;
  }

  /** Why the worker cannot write rows right now (a full disk), if it cannot. */
  get stalledBy(): Error | undefined {
    return this.stalled;
  }

  /** Whether the worker has started and takes rows (before that, rows wait or are written here). */
  get started(): boolean {
    return this.workerStarted;
  }

  /** Whether the worker is writing rows right now (no turn may run then). */
  get writing(): boolean {
    return this.busy;
  }

  /** Takes the rows of SENDs just written to the log, which now ends at `end`. */
  appendedTo(end: LogPosition, rows: readonly AppendedRow[]): void {
    this.end = end;
    this.appended += rows.length;
    this.unhanded.add(rows);
    if (this.appended - this.handedOver >= this.options.maxRows) this.handOver();
    else this.handOverLater();
  }

  /**
   * Runs `body` (synchronous SQL on the broker's connection) once every SEND
   * appended so far is in the database and the worker is idle.
   */
  turn<T>(body: () => T): Promise<T> {
    if (this.failed) return Promise.reject(new ApplierFailed());
    // While the queued turns run (onReply), a new one joins the queue: handing rows over from
    // here would set the worker writing under the turns still to run.
    const free = !this.busy && !this.runningTurns && !this.held && this.turns.length === 0;
    if (free && this.applied < this.appended) this.catchUpHere();
    if (free && (this.applied >= this.appended || this.stalled)) {
      try {
        return Promise.resolve(body());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise((resolve, reject) => {
      this.turns.push({ need: this.appended, body, resolve: resolve as (v: unknown) => void, reject });
      if (!this.busy && !this.runningTurns && !this.held) this.handOver();
    });
  }

  /**
   * Runs `work` (another connection's write, such as a WAL truncation) once every SEND appended
   * so far is in the database and the worker is idle; until it settles, nothing is handed to
   * the worker and no turn runs.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.turn(() => {
      this.held = true;
      return work().finally(() => {
        this.held = false;
        if (this.failed) return;
        this.runReadyTurns();
        this.handOverIfDue();
      });
    }) as unknown as Promise<T>;
  }

  /** Waits until everything appended is committed, then stops the worker. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.cancelHandOver();
      // A failed worker was terminated already.
      if (this.failed) return;
      await this.turn(() => undefined).catch(() => {});
      if (this.failed) return;
      const exited = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
      this.worker.ref();
      this.worker.postMessage({ type: "close" } satisfies ApplyRequest);
      await exited;
    })();
    return this.closing;
  }

  private handOver(): void {
    if (
      !this.workerStarted ||
      this.busy ||
      this.runningTurns ||
      this.held ||
      this.failed ||
      this.handedOver >= this.appended
    )
      return;
    // After a stall, not before the retry is due (the retry timer hands over then).
    if (this.stalled && Date.now() - this.stalledAtMs < STALL_RETRY_MS) {
      if (this.timer === undefined) this.retryLater();
      return;
    }
    this.cancelHandOver();
    this.busy = true;
    this.handedOver = this.appended;
    const { packed, keys, others } = this.unhanded.take();
    const request: ApplyRequest = { type: "apply", to: this.end, packed, keys, others: others.map(portable) };
    this.worker.postMessage(request, [packed.buffer as ArrayBuffer]);
  }

  private onReply(reply: ApplyReply): void {
    if (reply.type === "ready") {
      this.workerStarted = true;
      this.runReadyTurns();
      this.handOverIfDue();
      return;
    }
    this.busy = false;
    if (reply.type === "failed") {
      this.fail(new Error(reply.message));
      return;
    }
    if (reply.type === "stalled") {
      this.stall(reply);
      return;
    }
    this.stalled = undefined;
    this.applied = this.handedOver;
    this.runningTurns = true;
    try {
      this.options.onApplied(reply.released, reply.replaced);
    } finally {
      this.runningTurns = false;
    }
    this.runReadyTurns();
    this.handOverIfDue();
  }

  /**
   * Runs the queued turns whose SENDs are in the database, one after the other, while the
   * worker has nothing to do; nothing is handed over until they are done (see turn()).
   */
  private runReadyTurns(): void {
    if (this.busy || this.held || this.failed) return;
    this.runningTurns = true;
    try {
      if (this.turns.length > 0 && this.turns[0].need > this.applied) this.catchUpHere();
      while (this.turns.length > 0 && this.turns[0].need <= this.applied && !this.held) {
        const turn = this.turns.shift() as Turn;
        try {
          turn.resolve(turn.body());
        } catch (err) {
          turn.reject(err);
        }
      }
    } finally {
      this.runningTurns = false;
    }
  }

  private handOverIfDue(): void {
    if (this.failed || this.held) return;
    if (this.turns.length > 0 || this.appended - this.handedOver >= this.options.maxRows) this.handOver();
    else if (this.appended > this.handedOver) this.handOverLater();
  }

  /**
   * The worker could not write for lack of space: the rows wait here again, and are handed over
   * again after a while. Meanwhile turns run without them (reads do not see those SENDs yet,
   * which are durable in the log; writes fail on their own if the disk is still full): a full
   * disk must not stop reads.
   */
  private stall(reply: ApplyReply & { type: "stalled" }): void {
    this.unhanded.putBack({ packed: reply.packed, keys: reply.keys, others: reply.others });
    this.handedOver = this.applied;
    this.stalled = new Error(reply.message);
    this.options.onStalled?.(this.stalled);
    this.runningTurns = true;
    try {
      for (const turn of this.turns.splice(0)) {
        try {
          turn.resolve(turn.body());
        } catch (err) {
          turn.reject(err);
        }
      }
    } finally {
      this.runningTurns = false;
    }
    this.stalledAtMs = Date.now();
    this.cancelHandOver();
    this.retryLater();
  }

  private retryLater(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.handOver();
    }, STALL_RETRY_MS);
    this.timer.unref();
  }

  /** Hands the rows not handed over yet to the worker within the interval. */
  private handOverLater(): void {
    if (this.timer !== undefined || this.busy) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.handOver();
    }, this.options.intervalMs);
    this.timer.unref();
  }

  private cancelHandOver(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Writes the few rows not handed over yet on the calling thread: a hand-over costs the event
   * loop far more than writing a few rows, plus a round trip that a FETCH right after a SEND
   * would wait for every time.
   */
  private catchUpHere(): void {
    if (this.busy || this.appended - this.handedOver > WRITE_HERE_ROWS) return;
    try {
      this.options.writeHere(this.unhanded.peek(), this.end);
    } catch {
      return; // The worker takes them, and reports what goes wrong.
    }
    this.unhanded.clear();
    this.handedOver = this.appended;
    this.applied = this.appended;
    this.cancelHandOver();
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.busy = false;
    this.cancelHandOver();
    void this.worker.terminate();
    this.options.onFailed(err);
    for (const turn of this.turns.splice(0)) turn.reject(new ApplierFailed());
  }
}

/**
 * A row as it crosses to the worker: bytes copied to their own size for a delayed row, which
 * keeps them in its table, and left out for the others, whose bytes the log has (a view would
 * take its whole record along).
 */
function portable(row: AppendedRow): AppendedRow {
  if (row.dueMs !== null) {
    return { ...row, payload: Buffer.from(row.payload), header: row.header && Buffer.from(row.header) };
  }
  return { ...row, payload: EMPTY, header: null };
}

const EMPTY = new Uint8Array(0);
