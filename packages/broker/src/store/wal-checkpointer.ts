import { Worker } from "node:worker_threads";
import { compiledWorkerUrl } from "../compiled-worker.js";
import type { CheckpointReply, CheckpointRequest, CheckpointWorkerData } from "./wal-checkpoint-worker.js";

/** At most one checkpoint this often: each costs two fsyncs however little it copies. */
const MIN_INTERVAL_MS = 250;

/** The outcome of a TRUNCATE checkpoint: whether the WAL is empty now, and its size. */
export interface TruncateResult {
  ok: boolean;
  walBytes: number;
}

/**
 * Runs SQLite WAL checkpoints on a worker thread. Checkpointing on the
 * committing connection (SQLite's default) holds the event loop for the
 * checkpoint's fsyncs: tens of milliseconds every thousand pages, which was
 * most of the broker's p99 under load.
 *
 * Passive checkpoints never reset the WAL while commits keep coming (SQLite
 * starts it over only when a writer finds it fully copied), so the store asks
 * for a TRUNCATE one (`truncate`) once the WAL grew past its bound, at a
 * moment no other connection writes.
 */
export class WalCheckpointer {
  private running = false;
  /** Commits came while a checkpoint ran: it may not have seen them, so another one follows. */
  private askedWhileRunning = false;
  private lastStartMs = 0;
  private timer?: NodeJS.Timeout;
  /** The worker failed or exited: nothing more to ask of it. */
  private gone = false;
  /** A TRUNCATE asked for while a passive checkpoint ran, and whom to tell. */
  private truncateWaiting?: (result: TruncateResult) => void;
  private truncateRunning?: (result: TruncateResult) => void;
  /** The WAL's size after the last checkpoint (bytes). */
  walBytes = 0;

  private constructor(
    private readonly worker: Worker,
    /** Called with the WAL's size after each passive checkpoint, or when the worker failed. */
    onResult: (reply: CheckpointReply) => void,
  ) {
    worker.on("message", (reply: CheckpointReply) => {
      this.running = false;
      if (reply.type !== "failed") this.walBytes = reply.walBytes;
      if (reply.type === "truncated") {
        const told = this.truncateRunning;
        this.truncateRunning = undefined;
        told?.({ ok: reply.ok, walBytes: reply.walBytes });
      } else onResult(reply);
      this.runWaitingTruncate();
      if (this.askedWhileRunning) {
        this.askedWhileRunning = false;
        this.request();
      }
    });
    worker.on("error", (err) => {
      this.gone = true;
      this.endTruncates();
      onResult({ type: "failed", message: err.message });
    });
    worker.on("exit", () => {
      this.gone = true;
      this.endTruncates();
    });
    worker.unref();
  }

  /** Undefined when the worker's code is missing (run the build): the caller checkpoints itself then. */
  static start(
    data: CheckpointWorkerData,
    onResult: (reply: CheckpointReply) => void,
  ): WalCheckpointer | undefined {
    const url = compiledWorkerUrl("store/wal-checkpoint-worker.js");
    if (!url) return undefined;
    return new WalCheckpointer(new Worker(url, { workerData: data }), onResult);
  }

  /** Asks for a checkpoint after new commits; coalesced to one per interval. */
  request(): void {
    if (this.running) {
      // Dropping it would leave the last commits of a burst uncopied, and an idle store's WAL large.
      this.askedWhileRunning = true;
      return;
    }
    if (this.timer || this.gone) return;
    const waitMs = this.lastStartMs + MIN_INTERVAL_MS - Date.now();
    if (waitMs > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        if (!this.running && !this.gone) this.run();
      }, waitMs);
      this.timer.unref();
      return;
    }
    this.run();
  }

  /** Copies the whole WAL and truncates it to zero bytes; call while no other connection writes. */
  truncate(): Promise<TruncateResult> {
    if (this.gone) return Promise.resolve({ ok: false, walBytes: this.walBytes });
    if (this.truncateWaiting || this.truncateRunning) {
      return Promise.resolve({ ok: false, walBytes: this.walBytes });
    }
    return new Promise((resolve) => {
      this.truncateWaiting = resolve;
      this.runWaitingTruncate();
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    if (this.gone) return;
    const exited = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
    // Referenced again so the process waits for the worker's connection to close.
    this.worker.ref();
    this.worker.postMessage({ type: "close" } satisfies CheckpointRequest);
    await exited;
  }

  private run(): void {
    this.running = true;
    this.lastStartMs = Date.now();
    this.worker.postMessage({ type: "checkpoint" } satisfies CheckpointRequest);
  }

  private runWaitingTruncate(): void {
    if (this.running || !this.truncateWaiting) return;
    this.truncateRunning = this.truncateWaiting;
    this.truncateWaiting = undefined;
    this.running = true;
    this.worker.postMessage({ type: "truncate" } satisfies CheckpointRequest);
  }

  private endTruncates(): void {
    for (const told of [this.truncateWaiting, this.truncateRunning])
      told?.({ ok: false, walBytes: this.walBytes });
    this.truncateWaiting = undefined;
    this.truncateRunning = undefined;
  }
}
