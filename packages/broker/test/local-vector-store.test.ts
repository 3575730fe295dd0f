import { describe, expect, it } from "vitest";
import { LocalVectorStore } from "../src/index.js";
import { clusteredVectors, freshDirs, vectorStoreConformance } from "./vector-store-conformance.js";

const freshDir = freshDirs("mq9-vectors-");

vectorStoreConformance("LocalVectorStore, in memory, exact", {
  open: async () => ({ store: await LocalVectorStore.open({ dataDir: ":memory:" }) }),
});

vectorStoreConformance("LocalVectorStore, on disk, HNSW past 1,000 vectors", {
  open: async () => {
    const dataDir = freshDir();
    const options = { dataDir, annThreshold: 1000 };
    return { store: await LocalVectorStore.open(options), reopen: () => LocalVectorStore.open(options) };
  },
});

describe("LocalVectorStore — the approximate index", () => {
  it("is built in the background past the threshold; rows not yet in it are searched exactly", async () => {
    const dataDir = freshDir();
    const store = await LocalVectorStore.open({ dataDir, annThreshold: 500 });
    const vectors = clusteredVectors(2000, 32, 40);
    await store.upsert(vectors.map((vector, id) => ({ id, agent: `a${id % 100}`, vector })));
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: 2000, pending: 0 });
    const fresh = clusteredVectors(1, 32, 1, 4242)[0];
    await store.upsert([{ id: 5000, agent: "late", vector: fresh }]);
    expect(store.status().pending + store.status().indexed).toBe(2001);
    expect((await store.query(fresh, {}, 1))[0]).toMatchObject({ id: 5000, agent: "late" });
    await store.delete({ agents: ["a1"] });
    for (const hit of await store.query(vectors[1], {}, 50)) expect(hit.agent).not.toBe("a1");
    await store.close();

    const reopened = await LocalVectorStore.open({ dataDir, annThreshold: 500 });
    expect(reopened.status().indexed).toBeGreaterThanOrEqual(1980);
    expect(await reopened.count()).toBe(2001 - 20);
    expect((await reopened.query(fresh, {}, 1))[0].id).toBe(5000);
    for (const hit of await reopened.query(vectors[1], {}, 50)) expect(hit.agent).not.toBe("a1");
    await reopened.close();
  });
});
