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
}

interface Job {
  texts: string[];
  resolve(vectors: Float32Array[]): void;
  reject(err: Error): void;
}

function workerUrl(): URL {
  const url = compiledWorkerUrl("embedding/embedding-worker.js");
  if (url) return url;
  throw new EmbedderUnavailableError(
    `the embedding worker ${fileURLToPath(new URL("./embedding-worker.js", import.meta.url))} is missing; run the build (npx tsc -b)`,
  );
}

/**
 * Runs an embedder in a worker thread so that model inference never blocks
 * the broker's event loop. Requests that arrive while the model is busy are
 * merged into the next batch (queries ahead of documents).
 */
export class ThreadedEmbedder implements Embedder {
  readonly id: string;
  private readonly maxBatch: number;
  private worker?: Worker;
  private loading?: Promise<number>;
  private readonly queues: Record<EmbedPurpose, Job[]> = { query: [], document: [] };
  private inFlight?: { seq: number; jobs: Job[]; purpose: EmbedPurpose };
  private seq = 0;
  private broken?: Error;

  constructor(private readonly options: ThreadedEmbedderOptions) {
    this.id = options.id;
    this.maxBatch = options.maxBatch ?? 32;
  }

  load(): Promise<number> {
    this.loading ??= new Promise<number>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = new Worker(workerUrl(), { workerData: { spec: this.options.spec } });
      } catch (err) {
        reject(err);
        return;
      }
      this.worker = worker;
      worker.unref();
      const onLoad = (reply: WorkerReply) => {
        if (reply.type === "loaded") resolve(reply.dimensions);
        else if (reply.type === "failed" && reply.seq === undefined) {
          reject(reply.unavailable ? new EmbedderUnavailableError(reply.message) : new Error(reply.message));
        }
      };
      worker.on("message", onLoad);
      worker.on("message", (reply: WorkerReply) => this.settle(reply));
      worker.on("error", (err) => this.fail(err, reject));
      worker.on("exit", (code) =>
        this.fail(new Error(`the embedding worker exited with code ${code}`), reject),
      );
      worker.postMessage({ type: "load" } satisfies WorkerRequest);
    }).catch((err: Error) => {
      this.broken = err;
      throw err;
    });
    return this.loading;
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
    if (this.inFlight || !this.worker || this.broken) return;
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
    this.inFlight = { seq, jobs, purpose };
    this.worker.ref();
    const request: WorkerRequest = { type: "embed", seq, texts: jobs.flatMap((j) => j.texts), purpose };
    this.worker.postMessage(request);
  }

  private settle(reply: WorkerReply): void {
    const batch = this.inFlight;
    if (!batch || reply.type === "loaded" || reply.seq !== batch.seq) return;
    this.inFlight = undefined;
    this.worker?.unref();
    if (reply.type === "failed") {
      const err = reply.unavailable ? new EmbedderUnavailableError(reply.message) : new Error(reply.message);
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

  private fail(err: Error, rejectLoad: (err: Error) => void): void {
    if (this.worker === undefined) return;
    this.worker = undefined;
    this.broken ??= err;
    rejectLoad(err);
    this.rejectAll(err);
  }

  private rejectAll(err: Error): void {
    const jobs = [...(this.inFlight?.jobs ?? []), ...this.queues.query, ...this.queues.document];
    this.inFlight = undefined;
    this.queues.query = [];
    this.queues.document = [];
    for (const job of jobs) job.reject(err);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.broken ??= new Error("the embedder is closed");
    this.rejectAll(this.broken);
    this.worker = undefined;
    if (worker) await worker.terminate();
  }
}
