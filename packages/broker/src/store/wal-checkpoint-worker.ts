// Worker thread: copies the SQLite WAL into the database file on request, with its own connection,
// so the fsyncs of a checkpoint never stall the broker's event loop.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

export interface CheckpointWorkerData {
  file: string;
  synchronous: "NORMAL" | "FULL";
}

export type CheckpointRequest = { type: "checkpoint" } | { type: "close" };

export type CheckpointReply =
  | { type: "checkpointed"; walFrames: number; copiedFrames: number }
  | { type: "failed"; message: string };

const { file, synchronous } = workerData as CheckpointWorkerData;
const db = new Database(file, { timeout: 0 });
db.pragma(`synchronous = ${synchronous}`);

parentPort?.on("message", (request: CheckpointRequest) => {
  if (request.type === "close") {
    db.close();
    parentPort?.close();
    return;
  }
  let reply: CheckpointReply;
  try {
    // PASSIVE: copies what it can without waiting on, or blocking, the broker's writes.
    const [result] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
    reply = { type: "checkpointed", walFrames: result.log, copiedFrames: result.checkpointed };
  } catch (err) {
    reply = { type: "failed", message: (err as Error).message };
  }
  parentPort?.postMessage(reply);
});
