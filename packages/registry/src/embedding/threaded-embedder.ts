import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { compiledWorkerUrl } from "../compiled-worker.js";
import { type Embedder, EmbedderUnavailableError, type EmbedOptions, type EmbedPurpose } from "./embedder.js";
import type { EmbedderSpec } from "./embedder-factory.js";
import type { WorkerReply, WorkerRequest } from "./embedding-worker.js";

export interface ThreadedEmbedderOptions {
  spec: EmbedderSpec;
  /** Id of the embedder the spec builds (the worker's embedder is not visible from here). */
  id: string;
  /** Most texts in one call into the model; concurrent requests are merged up to it. */
  maxBatch?: number;
  /** Worker threads, each with its own copy of the model (default: one per core, at most 4). */
  workers?: number;
}

interface Job {
  texts: string[];
  resolve(vectors: Float32Array[]): void;
  reject(err: Error): void;
}

/** One worker thread and the batch it is running. */
interface Slot {
  worker: Worker;
  inFlight?: { seq: number; jobs: Job[] };
}

function workerUrl(): URL {
  const url = compiledWorkerUrl("embedding/embedding-worker.js");
  if (url) return url;
  throw new EmbedderUnavailableError(
    `the embedding worker ${fileURLToPath(new URL("./embedding-worker.js", import.meta.url))} is missing; run the build (npx tsc -b)`,
  );
}

/** The error a worker reported, as this thread raises it (its retry intent kept). */
function reported(reply: { message: string; unavailable: boolean; retryable: boolean }): Error {
  const err = reply.unavailable ? new EmbedderUnavailableError(reply.message) : new Error(reply.message);
  return Object.assign(err, { retryable: reply.retryable });
}

/** One worker per core leaves the broker's event loop to share them; past 4 the model copies cost more than they give. */
function defaultWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/**
 * Runs an embedder in worker threads so that model inference never blocks
 * the broker's event loop. Requests that arrive while every worker is busy
 * are merged into the next batch (queries ahead of documents), and each idle
 * worker takes the next batch, so concurrent queries and a backlog of skills
 * use every core.
 */
export class ThreadedEmbedder implements Embedder {
  readonly id: string;
  /** How many batches run at once: callers with much to embed split it into this many calls. */
  readonly parallelism: number;
  private readonly maxBatch: number;
  private slots: Slot[] = [];
  private loading?: Promise<number>;
  private readonly queues: Record<EmbedPurpose, Job[]> = { query: [], document: [] };
  private seq = 0;
  private broken?: Error;

  constructor(private readonly options: ThreadedEmbedderOptions) {
    this.id = options.id;
    this.maxBatch = options.maxBatch ?? 32;
    this.parallelism = Math.max(1, Math.floor(options.workers ?? defaultWorkers()));
  }

  load(): Promise<number> {
    // Every worker settles its load before any is terminated: ending a thread while it is inside
    // a native model load (onnxruntime) aborts the whole process.
    this.loading ??= Promise.allSettled(
      Array.from({ length: this.parallelism }, () => this.startWorker()),
    ).then((results) => {
      const failed = results.find((r) => r.status === "rejected");
      if (failed === undefined) return (results[0] as PromiseFulfilledResult<number>).value;
      const err = failed.reason as Error;
      this.broken ??= err;
      this.rejectAll(err);
      for (const slot of this.slots.splice(0)) void slot.worker.terminate();
      throw err;
    });
    return this.loading;
  }

  private startWorker(): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = new Worker(workerUrl(), { workerData: { spec: this.options.spec } });
      } catch (err) {
        reject(err);
        return;
      }
      const slot: Slot = { worker };
      this.slots.push(slot);
      worker.unref();
      worker.on("message", (reply: WorkerReply) => {
        if (reply.type === "loaded") resolve(reply.dimensions);
        else if (reply.type === "failed" && reply.seq === undefined) {
          reject(reported(reply));
        } else this.settle(slot, reply);
      });
      worker.on("error", (err) => this.fail(slot, err, reject));
      worker.on("exit", (code) =>
        this.fail(slot, new Error(`the embedding worker exited with code ${code}`), reject),
      );
      worker.postMessage({ type: "load" } satisfies WorkerRequest);
    });
  }

  embed(texts: string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    if (this.broken) return Promise.reject(this.broken);
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.queues[options.purpose ?? "document"].push({ texts, resolve, reject });
      this.load().then(
        () => this.pump(),
        (err) => this.rejectAll(err),
      );
    });
  }

  private pump(): void {
    if (this.broken) return;
    for (const slot of this.slots) {
      if (slot.inFlight) continue;
      const purpose: EmbedPurpose = this.queues.query.length > 0 ? "query" : "document";
      const queue = this.queues[purpose];
      if (queue.length === 0) return;
      const jobs: Job[] = [];
      let count = 0;
      while (queue.length > 0 && (jobs.length === 0 || count + queue[0].texts.length <= this.maxBatch)) {
        const job = queue.shift()!;
        jobs.push(job);
        count += job.texts.length;
      }
      const seq = ++this.seq;
      slot.inFlight = { seq, jobs };
      slot.worker.ref();
      const request: WorkerRequest = { type: "embed", seq, texts: jobs.flatMap((j) => j.texts), purpose };
      slot.worker.postMessage(request);
    }
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    const batch = slot.inFlight;
    if (!batch || reply.type === "loaded" || reply.seq !== batch.seq) return;
    slot.inFlight = undefined;
    slot.worker.unref();
    if (reply.type === "failed") {
      const err = reported(reply);
      for (const job of batch.jobs) job.reject(err);
    } else {
      let offset = 0;
      for (const job of batch.jobs) {
        const vectors = job.texts.map((_, i) =>
          reply.data.slice((offset + i) * reply.dimensions, (offset + i + 1) * reply.dimensions),
        );
        offset += job.texts.length;
        job.resolve(vectors);
      }
    }
    this.pump();
  }

  /** A worker that dies takes the embedder down with it: every waiting and later call fails with the reason. */
  private fail(slot: Slot, err: Error, rejectLoad: (err: Error) => void): void {
    if (!this.slots.includes(slot)) return;
    this.slots = this.slots.filter((s) => s !== slot);
    this.broken ??= err;
    rejectLoad(err);
    for (const job of slot.inFlight?.jobs ?? []) job.reject(err);
    this.rejectAll(err);
  }

  private rejectAll(err: Error): void {
    const jobs = [
      ...this.slots.flatMap((slot) => slot.inFlight?.jobs ?? []),
      ...this.queues.query,
      ...this.queues.document,
    ];
    for (const slot of this.slots) slot.inFlight = undefined;
    this.queues.query = [];
    this.queues.document = [];
    for (const job of jobs) job.reject(err);
  }

  async close(): Promise<void> {
    // Not while a worker is still loading its model (see load).
    await this.loading?.catch(() => undefined);
    const slots = this.slots.splice(0);
    this.broken ??= new Error("the embedder is closed");
    for (const job of slots.flatMap((slot) => slot.inFlight?.jobs ?? [])) job.reject(this.broken);
    this.rejectAll(this.broken);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }
}
