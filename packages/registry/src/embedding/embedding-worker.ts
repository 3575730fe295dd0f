// Entry of the embedding worker thread: runs one embedder off the broker's event loop.
import { parentPort, workerData } from "node:worker_threads";
import type { EmbedPurpose } from "./embedder.js";
import { createEmbedder, type EmbedderSpec } from "./embedder-factory.js";

export type WorkerRequest =
  | { type: "load" }
  | { type: "embed"; seq: number; texts: string[]; purpose: EmbedPurpose }
  | { type: "close" };

export type WorkerReply =
  | { type: "loaded"; dimensions: number }
  | { type: "vectors"; seq: number; dimensions: number; data: Float32Array }
  | { type: "failed"; seq?: number; message: string; unavailable: boolean; retryable: boolean };

const port = parentPort!;
const embedder = createEmbedder((workerData as { spec: EmbedderSpec }).spec);

function failure(err: unknown, seq?: number): WorkerReply {
  const error = err as Error;
  return {
    type: "failed",
    seq,
    message: error.message,
    unavailable: error.name === "EmbedderUnavailableError",
    retryable: (error as { retryable?: unknown }).retryable === true,
  };
}

/** The model calls under way: closing waits for them, since the model must not go while it runs. */
const running = new Set<Promise<unknown>>();
function track<T>(work: Promise<T>): Promise<T> {
  running.add(work);
  void work.catch(() => {}).finally(() => running.delete(work));
  return work;
}

port.on("message", (request: WorkerRequest) => {
  if (request.type === "load") {
    track(embedder.load()).then(
      (dimensions) => port.postMessage({ type: "loaded", dimensions } satisfies WorkerReply),
      (err) => port.postMessage(failure(err)),
    );
  } else if (request.type === "embed") {
    track(embedder.embed(request.texts, { purpose: request.purpose })).then(
      (vectors) => {
        const dimensions = vectors[0]?.length ?? 0;
        const data = new Float32Array(vectors.length * dimensions);
        for (const [i, v] of vectors.entries()) data.set(v, i * dimensions);
        const reply: WorkerReply = { type: "vectors", seq: request.seq, dimensions, data };
        port.postMessage(reply, [data.buffer]);
      },
      (err) => port.postMessage(failure(err, request.seq)),
    );
  } else {
    // The port closes last: with it gone the thread has nothing left and exits.
    void Promise.allSettled([...running])
      .then(() => embedder.close())
      .catch(() => {})
      .finally(() => port.close());
  }
});
