import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { storeConformance } from "./store-conformance.js";

const dirs = new WeakMap<Store, string>();

// Reads served from the recent-message memory, and every read from SQLite; rows written by the
// worker thread, and by the store's own thread.
for (const [label, recentMessageBytes, rowsOnWorker] of [
  ["sqlite", undefined, true],
  ["sqlite, no recent-message memory", 0, true],
  ["sqlite, rows written on the calling thread", undefined, false],
] as const) {
  storeConformance(label, {
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
      const store = new SqliteStore({ dataDir: dir, recentMessageBytes, rowsOnWorker });
      dirs.set(store, dir);
      return store;
    },
    async reopen(previous) {
      const dir = dirs.get(previous)!;
      await previous.close();
      const store = new SqliteStore({ dataDir: dir, recentMessageBytes, rowsOnWorker });
      dirs.set(store, dir);
      return store;
    },
  });
}

describe("sqlite store files", () => {
  it("refuses a store written in another format instead of misreading it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const store = new SqliteStore({ dataDir: dir });
    await store.close();
    const raw = new Database(join(dir, "mq9.db"));
    raw.pragma("user_version = 1");
    raw.close();
    expect(() => new SqliteStore({ dataDir: dir })).toThrow(
      /written by another mq9 version \(format 1, this one reads 4\)/,
    );
  });
});
