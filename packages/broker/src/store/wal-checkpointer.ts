import { Worker } from "node:worker_threads";
import { compiledWorkerUrl } from "../compiled-worker.js";
import type { CheckpointReply, CheckpointRequest, CheckpointWorkerData } from "./wal-checkpoint-worker.js";

/** At most one checkpoint this often: each costs two fsyncs however little it copies. */
const MIN_INTERVAL_MS = 250;

/**
 * Runs SQLite WAL checkpoints on a worker thread. Checkpointing on the
 * committing connection (SQLite's default) holds the event loop for the
 * checkpoint's fsyncs: tens of milliseconds every thousand pages, which was
 * most of the broker's p99 under load.
 */
export class WalCheckpointer {
  private running = false;
  private lastStartMs = 0;
  private timer?: NodeJS.Timeout;
  /** The worker failed or exited: nothing more to ask of it. */
  private gone = false;

  private constructor(
    private readonly worker: Worker,
    /** Called with the WAL's size after each checkpoint, or when the worker failed. */
    onResult: (reply: CheckpointReply) => void,
  ) {
    worker.on("message", (reply: CheckpointReply) => {
      this.running = false;
      onResult(reply);
    });
    worker.on("error", (err) => {
      this.gone = true;
      onResult({ type: "failed", message: err.message });
    });
    worker.on("exit", () => {
      this.gone = true;
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
    if (this.running || this.timer || this.gone) return;
    const wait = this.lastStartMs + MIN_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.run();
      }, wait);
      this.timer.unref();
      return;
    }
    this.run();
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
}
