// Worker thread: copies the SQLite WAL into the database file on request, with its own connection,
// so the fsyncs of a checkpoint never stall the broker's event loop.
import { statSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

export interface CheckpointWorkerData {
  file: string;
  synchronous: "NORMAL" | "FULL";
}

/**
 * passive: copy what can be copied without waiting on, or blocking, anyone. truncate: copy
 * everything and cut the WAL file to zero bytes; asked for only while no other connection
 * writes (see LogApplier.exclusive), it waits for readers at most the busy timeout.
 */
export type CheckpointRequest = { type: "checkpoint" } | { type: "truncate" } | { type: "close" };

export type CheckpointReply =
  | { type: "checkpointed"; walFrames: number; copiedFrames: number; walBytes: number }
  | { type: "truncated"; ok: boolean; walBytes: number; message?: string }
  | { type: "failed"; message: string };

const { file, synchronous } = workerData as CheckpointWorkerData;
// PASSIVE never waits; the timeout is for TRUNCATE, which waits for readers to finish.
const db = new Database(file, { timeout: 2000 });
db.pragma(`synchronous = ${synchronous}`);

function walBytes(): number {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

parentPort?.on("message", (request: CheckpointRequest) => {
  if (request.type === "close") {
    db.close();
    parentPort?.close();
    return;
  }
  let reply: CheckpointReply;
  if (request.type === "truncate") {
    try {
      const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
      reply = { type: "truncated", ok: result.busy === 0, walBytes: walBytes() };
    } catch (err) {
      reply = { type: "truncated", ok: false, walBytes: walBytes(), message: (err as Error).message };
    }
    parentPort?.postMessage(reply);
    return;
  }
  try {
    const [result] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
    reply = {
      type: "checkpointed",
      walFrames: result.log,
      copiedFrames: result.checkpointed,
      walBytes: walBytes(),
    };
  } catch (err) {
    reply = { type: "failed", message: (err as Error).message };
  }
  parentPort?.postMessage(reply);
});
