import { rmSync } from "node:fs";
import type { RegistryStore } from "../src/store/registry-store.js";
import { SqliteRegistryStore } from "../src/store/sqlite-registry-store.js";
import { tempDir } from "./harness.js";
import { registryStoreConformance } from "./registry-store-conformance.js";

const dirs = new WeakMap<RegistryStore, string>();

registryStoreConformance("sqlite", {
  async open() {
    const dir = tempDir("mq9-registry-store-");
    const store = new SqliteRegistryStore({ dataDir: dir });
    dirs.set(store, dir);
    return store;
  },
  async reopen(previous) {
    const dir = dirs.get(previous)!;
    await previous.close();
    const store = new SqliteRegistryStore({ dataDir: dir });
    dirs.set(store, dir);
    return store;
  },
  async close(store) {
    await store.close();
    rmSync(dirs.get(store)!, { recursive: true, force: true });
  },
  // The vectors live apart from the registrations, in the node's own vector store.
  vectors: (_store, local) => local,
});
