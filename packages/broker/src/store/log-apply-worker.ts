// Worker thread: writes the rows of SENDs from the message log into SQLite, with its own
// connection, so their inserts and commits leave the broker's event loop.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import type { AppendedRow, SpanLocation } from "./appended-rows.js";
import { positionSaver } from "./message-log.js";
import { MessageRowWriter, type ReplacedMessage } from "./message-row-writer.js";
import type { LogPosition } from "./segment-log.js";

export interface ApplyWorkerData {
  file: string;
  synchronous: "NORMAL" | "FULL";
}

/**
 * The rows of the SENDs logged up to `to`: the plain ones packed with their idempotency keys (see
 * packRows), the others as rows, whose bytes only delayed ones carry (the rest are in the log already).
 */
export type ApplyRequest =
  | { type: "apply"; to: LogPosition; packed: Float64Array; keys: string[]; others: AppendedRow[] }
  | { type: "close" };

export type ApplyReply =
  /** The worker has opened its connection: from now on it takes rows. */
  | { type: "ready" }
  /**
   * The records up to the request's `to` are committed; `replaced` are the messages their keys
   * replaced, `released` where those had their bytes in the log.
   */
  | { type: "applied"; released: SpanLocation[]; replaced: ReplacedMessage[] }
  /**
   * Nothing was written for lack of space (a full disk): the rows come back, to be handed over
   * again later.
   */
  | { type: "stalled"; message: string; packed: Float64Array; keys: string[]; others: AppendedRow[] }
  | { type: "failed"; message: string };

/** SQLite's codes for a write that failed for lack of space, or an I/O error a full disk causes. */
function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? "";
  return code === "SQLITE_FULL" || code.startsWith("SQLITE_IOERR");
}

const { file, synchronous } = workerData as ApplyWorkerData;
// The broker's own connection writes only while this one is idle (see LogApplier), so waiting
// stands only for a checkpoint or another short lock.
const db = new Database(file, { timeout: 5000 });
db.pragma(`synchronous = ${synchronous}`);
db.pragma("wal_autocheckpoint = 0");
let released: SpanLocation[] = [];
let replaced: ReplacedMessage[] = [];
const rows = new MessageRowWriter(db, (located, msgId, mbox) => {
  if (located) released.push(located);
  replaced.push({ mbox, msgId });
});
const savePosition = positionSaver(db);
const apply = db.transaction((request: ApplyRequest & { type: "apply" }) => {
  rows.writePacked(request);
  savePosition(request.to);
});

parentPort?.postMessage({ type: "ready" } satisfies ApplyReply);

parentPort?.on("message", (request: ApplyRequest) => {
  if (request.type === "close") {
    db.close();
    parentPort?.close();
    return;
  }
  let reply: ApplyReply;
  try {
    released = [];
    replaced = [];
    apply(request);
    reply = { type: "applied", released, replaced };
  } catch (err) {
    if (isRetryable(err)) {
      const { packed, keys, others } = request;
      reply = { type: "stalled", message: (err as Error).message, packed, keys, others };
      parentPort?.postMessage(reply, [packed.buffer as ArrayBuffer]);
      return;
    }
    reply = { type: "failed", message: (err as Error).message };
  }
  parentPort?.postMessage(reply);
});
