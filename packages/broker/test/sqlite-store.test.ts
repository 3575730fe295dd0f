import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/store/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { storeConformance } from "./store-conformance.js";

const dirs = new WeakMap<Store, string>();

storeConformance("sqlite", {
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "mq9-store-"));
    const store = new SqliteStore({ dataDir: dir });
    dirs.set(store, dir);
    return store;
  },
  async reopen(previous) {
    const dir = dirs.get(previous)!;
    await previous.close();
    const store = new SqliteStore({ dataDir: dir });
    dirs.set(store, dir);
    return store;
  },
});
