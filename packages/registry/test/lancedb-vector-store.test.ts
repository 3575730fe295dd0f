import { existsSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { describe, expect, it } from "vitest";
import { LanceDbVectorStore } from "../src/index.js";
import { startTestBroker } from "./harness.js";
import { clusteredVectors, freshDirs, unit, vectorStoreConformance } from "./vector-store-conformance.js";

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);

const freshDir = freshDirs("mq9-lancedb-");

vectorStoreConformance("LanceDbVectorStore, in memory, exact", {
  open: async () => ({ store: await LanceDbVectorStore.open({ dataDir: ":memory:" }) }),
});

vectorStoreConformance("LanceDbVectorStore, on disk, exact (no index)", {
  open: async () => {
    const options = { dataDir: freshDir(), annThreshold: 1_000_000 };
    return { store: await LanceDbVectorStore.open(options), reopen: () => LanceDbVectorStore.open(options) };
  },
});

vectorStoreConformance("LanceDbVectorStore, on disk, IVF_HNSW_SQ past 1,000 vectors", {
  open: async () => {
    const options = { dataDir: freshDir(), annThreshold: 1000 };
    return { store: await LanceDbVectorStore.open(options), reopen: () => LanceDbVectorStore.open(options) };
  },
});

describe("LanceDbVectorStore — the approximate index", () => {
  it("is built in the background past the threshold; rows not yet in it are searched at once", async () => {
    const dataDir = freshDir();
    const store = await LanceDbVectorStore.open({ dataDir, annThreshold: 500, exactFilterAgents: 2 });
    const vectors = clusteredVectors(2000, 32, 40);
    await store.upsert(vectors.map((vector, id) => ({ id, agent: `a${id % 100}`, vector })));
    await store.indexIdle();
    expect(store.status()).toEqual({ indexed: 2000, pending: 0, building: false });

    // Through the index now: recall@10 against exact search, unfiltered and under a filter of three agents.
    let found = 0;
    for (const query of clusteredVectors(20, 32, 40, 11)) {
      const truth = vectors
        .map((v, id) => ({ id, score: dot(v, query) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10);
      const hits = await store.query(query, {}, 10);
      for (const hit of hits) if (truth.some((t) => t.id === hit.id)) found++;
      expect(hits[0].score).toBeCloseTo(dot(vectors[hits[0].id], query), 5);
    }
    expect(found / 200).toBeGreaterThanOrEqual(0.9);
    const three = new Set(["a3", "a4", "a5"]);
    const filtered = await store.query(vectors[3], { agents: three }, 30);
    expect(filtered).toHaveLength(30);
    expect(filtered[0]).toMatchObject({ id: 3, agent: "a3" });
    for (const hit of filtered) expect(three.has(hit.agent)).toBe(true);
    const fresh = clusteredVectors(1, 32, 1, 4242)[0];
    await store.upsert([{ id: 5000, agent: "late", vector: fresh }]);
    expect((await store.query(fresh, {}, 1))[0]).toMatchObject({ id: 5000, agent: "late" });
    expect((await store.query(fresh, {}, 1))[0].score).toBeCloseTo(1, 5);
    expect(await store.delete({ agents: ["a1"] })).toBe(20);
    for (const hit of await store.query(vectors[1], {}, 50)) expect(hit.agent).not.toBe("a1");
    await store.indexIdle();
    expect(store.status()).toMatchObject({ pending: 0, building: false });
    await store.close();

    const reopened = await LanceDbVectorStore.open({ dataDir, annThreshold: 500 });
    expect(await reopened.count()).toBe(2001 - 20);
    expect(reopened.status().indexed).toBe(2001 - 20);
    expect((await reopened.query(fresh, {}, 1))[0].id).toBe(5000);
    for (const hit of await reopened.query(vectors[1], {}, 50)) expect(hit.agent).not.toBe("a1");
    await reopened.close();
  });

  it("scores as the default store does: the inner product of unit vectors", async () => {
    const store = await LanceDbVectorStore.open({ dataDir: freshDir(), annThreshold: 100 });
    const vectors = clusteredVectors(300, 16, 10);
    await store.upsert(vectors.map((vector, id) => ({ id, agent: `a${id % 30}`, vector })));
    await store.indexIdle();
    const query = clusteredVectors(1, 16, 10, 5)[0];
    for (const hit of await store.query(query, {}, 10)) {
      expect(hit.score).toBeCloseTo(dot(vectors[hit.id], query), 5);
    }
    await store.close();
  });
});

describe("LanceDbVectorStore — agent names in filters", () => {
  it("matches mailboxes with quotes, backslashes, SQL and newlines exactly", async () => {
    const store = await LanceDbVectorStore.open({ dataDir: freshDir() });
    const names = ["it's", "a' OR '1'='1", "back\\slash", 'dq"x', "new\nline", "%_*", "uni✓", "a"];
    await store.upsert(names.map((agent, id) => ({ id, agent, vector: unit([1, id, 0, 0]) })));
    for (const [id, agent] of names.entries()) {
      const hits = await store.query(unit([1, 0, 0, 0]), { agents: new Set([agent]) }, 10);
      expect(hits).toEqual([{ id, agent, score: expect.any(Number) }]);
    }
    expect(await store.delete({ agents: ["a' OR '1'='1"] })).toBe(1);
    expect(await store.count()).toBe(names.length - 1);
    await store.close();
  });
});

describe("a broker with registry.vectorStore 'lancedb'", () => {
  type Discovered = { error: string; agents: Array<{ name: string }>; warning?: string };

  it("re-embeds a default store's skills into LanceDB, answers from it, and keeps them across a restart", async () => {
    const dataDir = freshDir();
    const registry = { vectorStore: "lancedb" as const };
    type Broker = Awaited<ReturnType<typeof startTestBroker>>;
    const ask = async (t: Broker, body: Record<string, unknown>) =>
      ((await t.request(Subjects.agentDiscover, body)) as unknown as Discovered).agents.map((a) => a.name);
    const withBroker = async (
      options: Parameters<typeof startTestBroker>[0],
      use: (t: Broker) => Promise<void>,
    ) => {
      const t = await startTestBroker({ dataDir, ...options });
      try {
        await use(t);
      } finally {
        await t.close();
      }
    };
    await withBroker({}, async (t) => {
      const reg = (name: string, tags: string[], payload: string) =>
        t.request(Subjects.agentRegister, { name, mailbox: `${name}.inbox`, payload, tags });
      await reg("translator", ["language"], "Translates documents between English, Chinese and Japanese.");
      await reg("payroll", ["finance"], "Computes salaries, withholding and payslips for employees.");
      await reg("ledger", ["finance"], "Bookkeeping: keeps the general ledger and closes the books.");
      await t.broker.registry!.indexed();
    });
    await withBroker({ registry }, async (t) => {
      expect((await ask(t, { semantic: "put this letter into another language" }))[0]).toBe("translator");
      expect(await ask(t, { tags: ["finance"], semantic: "how much will staff be paid" })).toEqual([
        "payroll",
        "ledger",
      ]);
      await t.broker.registry!.indexed();
    });
    expect(existsSync(join(dataDir, "registry-lancedb"))).toBe(true);
    await withBroker({ registry }, async (t) => {
      expect(t.broker.registry!.status().vectors).toMatchObject({ pending: 3 });
      expect((await ask(t, { semantic: "accounting books" }))[0]).toBe("ledger");
    });
  });
});
