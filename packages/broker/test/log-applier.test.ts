import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { AppendedRow } from "../src/store/appended-rows.js";
import { LogApplier } from "../src/store/log-applier.js";
import { positionSaver } from "../src/store/message-log.js";
import { MessageRowWriter } from "../src/store/message-row-writer.js";
import { PendingRows } from "../src/store/packed-rows.js";
import { SQLITE_SCHEMA } from "../src/store/sqlite-schema.js";

/** Plain SEND rows with ids from `first`, as if their records sat in segment 1. */
function rows(first: number, count: number): AppendedRow[] {
  return Array.from({ length: count }, (_, i) => ({
    id: first + i,
    mbox: 1,
    priority: 2,
    key: null,
    tags: null,
    header: null,
    payload: new Uint8Array(0),
    createdMs: 1_000,
    expiresMs: null,
    dueMs: null,
    located: { segment: 1, offset: 16 + (first + i) * 8, length: 8 },
  }));
}

function openDatabase(): { db: Database.Database; file: string } {
  const file = join(mkdtempSync(join(tmpdir(), "mq9-applier-")), "mq9.db");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec(SQLITE_SCHEMA);
  return { db, file };
}

/** Waits (up to 30 s) until the applier's worker has started and takes rows. */
async function started(applier: LogApplier): Promise<void> {
  for (let waited = 0; !applier.started; waited += 10) {
    if (waited > 30_000) throw new Error("the log apply worker did not start");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function writeHereOn(db: Database.Database) {
  const writer = new MessageRowWriter(db, () => {});
  const savePosition = positionSaver(db);
  return db.transaction((packed, to) => {
    writer.writePacked(packed);
    savePosition(to);
  });
}

describe("log applier turns", () => {
  it("never runs a turn while the worker writes, even when a turn asked for from a commit's callback hands rows over", async () => {
    const { db, file } = openDatabase();
    const writer = new MessageRowWriter(db, () => {});
    const savePosition = positionSaver(db);
    const writeHere = db.transaction((packed, to) => {
      writer.writePacked(packed);
      savePosition(to);
    });
    const writingDuringTurns: boolean[] = [];
    const observe = () => writingDuringTurns.push(applier.writing);
    let askedFromCallback = false;
    const applier = LogApplier.start(
      { file, synchronous: "NORMAL" },
      { segment: 1, offset: 16 },
      {
        intervalMs: 60_000,
        maxRows: 10,
        writeHere,
        onFailed: (err) => {
          throw err;
        },
        // What the store does once a second: a turn of its own to look at the segments.
        onApplied: () => {
          if (askedFromCallback) return;
          askedFromCallback = true;
          void applier.turn(observe);
        },
      },
    ) as LogApplier;
    expect(applier).toBeDefined();
    await started(applier);
    applier.appendedTo({ segment: 1, offset: 1_000 }, rows(0, 100));
    expect(applier.writing).toBe(true);
    // Waits for the 100 rows handed over; then more rows arrive than are written on this thread.
    const queued = applier.turn(observe);
    applier.appendedTo({ segment: 1, offset: 2_000 }, rows(100, 100));
    await queued;
    await applier.turn(observe);
    await applier.close();
    expect(askedFromCallback).toBe(true);
    expect(writingDuringTurns).toEqual([false, false, false]);
    expect(db.prepare("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 200 });
    db.close();
  });

  it("a turn asked for while the worker starts does not wait for it: the few rows it needs are written here", async () => {
    const { db, file } = openDatabase();
    let workerCommits = 0;
    const applier = LogApplier.start(
      { file, synchronous: "NORMAL" },
      { segment: 1, offset: 16 },
      {
        // Rows are handed over as soon as they arrive: nothing but the start-up holds them back.
        intervalMs: 0,
        maxRows: 1,
        writeHere: writeHereOn(db),
        onFailed: (err) => {
          throw err;
        },
        onApplied: () => {
          workerCommits++;
        },
      },
    ) as LogApplier;
    expect(applier.started).toBe(false);
    applier.appendedTo({ segment: 1, offset: 100 }, rows(0, 1));
    // A FETCH right after the first SEND of a fresh broker: it used to wait for the worker to
    // load and open its connection, and then for its commit.
    const seen = await applier.turn(() => ({
      workerCommits,
      rows: db.prepare("SELECT count(*) AS n FROM messages").get(),
    }));
    expect(seen).toEqual({ workerCommits: 0, rows: { n: 1 } });
    // Once it has started, the worker takes the rows again.
    await started(applier);
    applier.appendedTo({ segment: 1, offset: 1_000 }, rows(1, 100));
    await applier.turn(() => undefined);
    await applier.close();
    expect(workerCommits).toBeGreaterThan(0);
    expect(db.prepare("SELECT count(*) AS n FROM messages").get()).toEqual({ n: 101 });
    db.close();
  });
});

describe("rows waiting for the worker", () => {
  const keyed = (row: AppendedRow, key: string): AppendedRow => ({ ...row, dedup: { key, untilMs: 9_000 } });

  it("idempotency keys stay beside their rows through a hand-over given back and rows added after it", () => {
    const { db } = openDatabase();
    const pending = new PendingRows();
    const [a, b, c, d] = rows(0, 4);
    pending.add([keyed(a, "ka"), b, keyed(c, "kc")]);
    // A full disk gives the rows back; more arrive before they are handed over again.
    const givenBack = pending.take();
    pending.add([keyed(d, "kd")]);
    pending.putBack(givenBack);
    new MessageRowWriter(db, () => {}).writePacked(pending.take());
    expect(db.prepare("SELECT id_key, msg_id FROM send_keys ORDER BY msg_id").all()).toEqual([
      { id_key: "ka", msg_id: 0 },
      { id_key: "kc", msg_id: 2 },
      { id_key: "kd", msg_id: 3 },
    ]);
    expect(db.prepare("SELECT msg_id FROM messages ORDER BY msg_id").pluck().all()).toEqual([0, 1, 2, 3]);
  });
});
