import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { compiledWorkerUrl } from "../compiled-worker.js";
import { RegistryDefaults } from "../defaults.js";
import { type Embedder, EmbedderUnavailableError, type EmbedOptions, type EmbedPurpose } from "./embedder.js";
import type { EmbedderSpec } from "./embedder-factory.js";
import type { WorkerReply, WorkerRequest } from "./embedding-worker.js";

export interface ThreadedEmbedderOptions {
  spec: EmbedderSpec;
  /** Id of the embedder the spec builds (the worker's embedder is not visible from here). */
  id: string;
  /** Most query texts in one call into the model; concurrent queries are merged up to it (default 32). */
  maxBatch?: number;
  /**
   * Most document texts a worker takes at once (default 16): a long document batch is split into
   * chunks of this many, so that a query waits for at most one chunk.
   */
  documentChunk?: number;
  /** Worker threads, each with its own copy of the model (default: one per core, at most 4). */
  workers?: number;
  /**
   * While another query batch is in the model, how long waiting queries may be held for more to
   * join them before an idle worker takes them (default QUERY_WINDOW_MS; 0: never held).
   */
  queryWindowMs?: number;
}

/**
 * How long queries may wait for company while the model is busy with others. A batch of 16 or
 * more costs the model markedly less per query than a few; the wait is bounded so that a lightly
 * loaded registry answers in about the time it did without it.
 */
export const QUERY_WINDOW_MS = RegistryDefaults.queryWindowMs;
/** Queries waiting that make a batch full enough to go without waiting longer. */
export const FULL_QUERY_BATCH = 16;

/**
 * How much longer waiting queries stay queued for company (ms; 0: they go now). Only while
 * another query batch is in the model: a lone query on an idle model goes at once, and a batch
 * already full goes at once.
 */
export function queryHoldMs(state: {
  windowMs: number;
  queryBatchInModel: boolean;
  waitingTexts: number;
  fullBatch: number;
  /** How long the waiting queries have been held so far (not how long they have waited: most
   * arrived while every worker was busy, and holding them from then on would hold none). */
  heldMs: number;
}): number {
  if (state.windowMs <= 0 || !state.queryBatchInModel || state.waitingTexts >= state.fullBatch) return 0;
  return Math.max(0, state.windowMs - state.heldMs);
}

interface Job {
  texts: string[];
  resolve(vectors: Float32Array[]): void;
  reject(err: Error): void;
  /** Runs in a model call of its own: it shared one that failed. */
  alone?: true;
}

/** One worker thread and the batch it is running. */
interface Slot {
  worker: Worker;
  inFlight?: { seq: number; jobs: Job[]; purpose: EmbedPurpose };
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

/**
 * A failed model call as its caller sees it, the call having been its own (callers that shared a
 * failed call are tried again alone): how many texts it held, since one caller may ask for many
 * (a missing model says so by itself).
 */
function batchFailed(
  reply: { message: string; unavailable: boolean; retryable: boolean },
  batch: { texts: number; purpose: EmbedPurpose },
): Error {
  if (reply.unavailable) return reported(reply);
  return reported({
    ...reply,
    message: `the embedding model failed on a batch of ${batch.texts} ${batch.purpose} text${batch.texts === 1 ? "" : "s"}: ${reply.message}`,
  });
}

/** One worker per core leaves the broker's event loop to share them; past 4 the model copies cost more than they give. */
function defaultWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** While queries keep every worker busy, one chunk of documents runs after this many query batches. */
const QUERY_BATCHES_PER_CHUNK = 4;

/** Cuts texts into chunks of `size` in their order; indices into `texts`. */
function chunksInOrder(texts: string[], size: number): number[][] {
  const chunks: number[][] = [];
  for (let i = 0; i < texts.length; i += size)
    chunks.push(Array.from({ length: Math.min(size, texts.length - i) }, (_, k) => i + k));
  return chunks;
}

/** Cuts texts into chunks of `size`, similar lengths together (fewer padded tokens in each); indices into `texts`. */
function chunksByLength(texts: string[], size: number): number[][] {
  const order = texts.map((_, i) => i).sort((a, b) => texts[a].length - texts[b].length);
  const chunks: number[][] = [];
  for (let i = 0; i < order.length; i += size) chunks.push(order.slice(i, i + size));
  return chunks;
}

/**
 * Runs an embedder in worker threads so that model inference never blocks
 * the broker's event loop. Each idle worker takes the next batch: every query
 * waiting (up to `maxBatch`, merged into one model call), else one chunk of
 * documents, so queries overtake a backlog of skills after at most one chunk
 * (and a steady stream of queries still lets one chunk through now and then).
 * Requests that arrive in one turn of the event loop are batched together;
 * while a query batch is in the model, an idle worker holds a few waiting
 * queries for up to the query window so that more share its call.
 */
export class ThreadedEmbedder implements Embedder {
  readonly id: string;
  /** How many batches run at once: callers with much to embed split it into this many calls. */
  readonly parallelism: number;
  private readonly maxBatch: number;
  private readonly documentChunk: number;
  private readonly queryWindowMs: number;
  private pumpScheduled = false;
  /** Pumps when the held queries' window ends. */
  private windowTimer?: NodeJS.Timeout;
  /** When an idle worker began holding the waiting queries for company. */
  private holdingSince?: number;
  /** Query batches run in a row while documents waited. */
  private queryStreak = 0;
  private slots: Slot[] = [];
  private loading?: Promise<number>;
  private readonly queues: Record<EmbedPurpose, Job[]> = { query: [], document: [] };
  private seq = 0;
  private broken?: Error;

  constructor(private readonly options: ThreadedEmbedderOptions) {
    this.id = options.id;
    this.maxBatch = options.maxBatch ?? 32;
    this.documentChunk = Math.max(1, options.documentChunk ?? 16);
    this.queryWindowMs = Math.max(0, options.queryWindowMs ?? QUERY_WINDOW_MS);
    this.parallelism = Math.max(1, Math.floor(options.workers ?? defaultWorkers()));
  }

  /** Batches handed to the workers so far, each one embed call in a worker: how calls are counted. */
  get batches(): number {
    return this.seq;
  }

  load(): Promise<number> {
    // Closed before any load: no worker is started (one would outlive the close).
    if (this.loading === undefined && this.broken) return Promise.reject(this.broken);
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
    const purpose = options.purpose ?? "document";
    // No model call takes more than its cap: a larger call is cut into jobs that each fit one.
    const cap = purpose === "query" ? this.maxBatch : this.documentChunk;
    return new Promise<Float32Array[]>((resolve, reject) => {
      if (texts.length <= cap) {
        this.queues[purpose].push({ texts, resolve, reject });
      } else {
        const vectors = new Array<Float32Array>(texts.length);
        let left = texts.length;
        // Queries keep their order (the first asked go first); documents go by length.
        const chunks = purpose === "query" ? chunksInOrder(texts, cap) : chunksByLength(texts, cap);
        for (const chunk of chunks) {
          this.queues[purpose].push({
            texts: chunk.map((i) => texts[i]),
            resolve: (part) => {
              chunk.forEach((i, k) => {
                vectors[i] = part[k];
              });
              left -= chunk.length;
              if (left === 0) resolve(vectors);
            },
            reject,
          });
        }
      }
      this.load().then(
        () => this.schedulePump(),
        (err) => this.rejectAll(err),
      );
    });
  }

  /** Pumps once the current turn of the event loop is done, so that requests arriving together share a batch. */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.broken) return;
    for (const slot of this.slots) {
      if (slot.inFlight) continue;
      // Queries first; but a steady stream of them must not keep skills from ever being searchable.
      const skillsTurn = this.queues.document.length > 0 && this.queryStreak >= QUERY_BATCHES_PER_CHUNK;
      const purpose: EmbedPurpose = this.queues.query.length > 0 && !skillsTurn ? "query" : "document";
      const queue = this.queues[purpose];
      if (queue.length === 0) return;
      if (purpose === "query" && this.holdQueries()) return;
      this.queryStreak = purpose === "query" && this.queues.document.length > 0 ? this.queryStreak + 1 : 0;
      // Waiting queries are shared among the idle workers: a few queries at once finish sooner on
      // every core than in one batch on one (a busy model has one idle worker, which takes them all).
      const limit = purpose === "query" ? Math.min(this.maxBatch, this.queryShare()) : this.documentChunk;
      const jobs: Job[] = [];
      let count = 0;
      while (
        queue.length > 0 &&
        (jobs.length === 0 || (!jobs[0].alone && !queue[0].alone && count + queue[0].texts.length <= limit))
      ) {
        const job = queue.shift()!;
        jobs.push(job);
        count += job.texts.length;
      }
      const seq = ++this.seq;
      slot.inFlight = { seq, jobs, purpose };
      slot.worker.ref();
      const request: WorkerRequest = { type: "embed", seq, texts: jobs.flatMap((j) => j.texts), purpose };
      slot.worker.postMessage(request);
    }
  }

  /**
   * Whether the waiting queries stay queued for now: while another query batch is in the model,
   * a few queries wait (up to the window) for more to join them, since a fuller batch costs less
   * per query; a lone query on an idle model goes at once. Schedules the pump for the window's end.
   */
  private holdQueries(): boolean {
    let texts = 0;
    for (const job of this.queues.query) texts += job.texts.length;
    const left = queryHoldMs({
      windowMs: this.queryWindowMs,
      queryBatchInModel: this.slots.some((s) => s.inFlight?.purpose === "query"),
      waitingTexts: texts,
      fullBatch: Math.min(this.maxBatch, FULL_QUERY_BATCH),
      heldMs: this.holdingSince === undefined ? 0 : performance.now() - this.holdingSince,
    });
    if (left === 0) {
      this.holdingSince = undefined;
      return false;
    }
    this.holdingSince ??= performance.now();
    if (this.windowTimer === undefined) {
      this.windowTimer = setTimeout(() => {
        this.windowTimer = undefined;
        this.pump();
      }, left);
      // A query batch is in flight (its worker held), so the timer need not keep the process alive.
      this.windowTimer.unref();
    }
    return true;
  }

  /** The waiting query texts over the idle workers. */
  private queryShare(): number {
    const idle = this.slots.filter((s) => !s.inFlight).length;
    let texts = 0;
    for (const job of this.queues.query) texts += job.texts.length;
    return Math.ceil(texts / Math.max(1, idle));
  }

  private settle(slot: Slot, reply: WorkerReply): void {
    const batch = slot.inFlight;
    if (!batch || reply.type === "loaded" || reply.seq !== batch.seq) return;
    slot.inFlight = undefined;
    slot.worker.unref();
    if (reply.type === "failed" && batch.jobs.length > 1 && !reply.unavailable) {
      // One caller's text may be what the model cannot take: each caller is tried again alone,
      // first in line, so the others get their vectors and only that one its error.
      const queue = this.queues[batch.purpose];
      queue.unshift(...batch.jobs.map((job): Job => ({ ...job, alone: true })));
    } else if (reply.type === "failed") {
      const texts = batch.jobs.reduce((n, job) => n + job.texts.length, 0);
      const err = batchFailed(reply, { texts, purpose: batch.purpose });
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
    this.broken ??= new Error("the embedder is closed");
    clearTimeout(this.windowTimer);
    // Not while a worker is still loading its model (see load).
    await this.loading?.catch(() => undefined);
    const slots = this.slots.splice(0);
    for (const job of slots.flatMap((slot) => slot.inFlight?.jobs ?? [])) job.reject(this.broken);
    this.rejectAll(this.broken);
    await Promise.all(slots.map((slot) => stopWorker(slot.worker)));
  }
}

/** How long a worker may take to finish its model call and release the model before it is ended. */
const WORKER_STOP_MS = 10_000;

/**
 * Asks a worker to finish what it runs and release its model, then waits for it to exit. Ending
 * a thread inside a native model call (onnxruntime) aborts the whole process, so terminate()
 * is the last resort, for a worker that does not exit in time.
 */
function stopWorker(worker: Worker): Promise<void> {
  return new Promise<void>((resolve) => {
    // Held (the worker runs unref'd): a closing broker waits for its workers before it exits.
    worker.ref();
    const timer = setTimeout(() => void worker.terminate().then(() => resolve()), WORKER_STOP_MS);
    worker.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    worker.postMessage({ type: "close" } satisfies WorkerRequest);
  });
}
