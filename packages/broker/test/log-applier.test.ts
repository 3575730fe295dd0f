import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { AppendedRow } from "../src/store/appended-rows.js";
import { LogApplier } from "../src/store/log-applier.js";
import { positionSaver } from "../src/store/message-log.js";
import { MessageRowWriter } from "../src/store/message-row-writer.js";
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
});
