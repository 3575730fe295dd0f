import { rmSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { VectorStore } from "../src/index.js";
import { tempDir } from "./harness.js";

export interface VectorStoreSuiteOptions {
  /** Opens a store; `reopen` opens the same persistent store again after `close`. */
  open(): Promise<{ store: VectorStore; reopen?: () => Promise<VectorStore> }>;
}

/** A maker of fresh data dirs for a test file, all removed after its tests. */
export function freshDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = tempDir(prefix);
    dirs.push(dir);
    return dir;
  };
}

/** A deterministic generator, so failures reproduce. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function unit(values: number[]): Float32Array {
  const v = Float32Array.from(values);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

/** Clustered unit vectors (like real embeddings: topics with variations), not uniform noise. */
export function clusteredVectors(count: number, dims: number, clusters: number, seed = 7): Float32Array[] {
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const centers = Array.from({ length: clusters }, () => Array.from({ length: dims }, gauss));
  return Array.from({ length: count }, (_, i) => unit(centers[i % clusters].map((c) => c + 0.6 * gauss())));
}

function exactTop(vectors: Float32Array[], query: Float32Array, k: number): number[] {
  return vectors
    .map((v, id) => ({ id, s: v.reduce((sum, x, i) => sum + x * query[i], 0) }))
    .sort((a, b) => b.s - a.s)
    .slice(0, k)
    .map((r) => r.id);
}

const e = (i: number, dims = 4) => unit(Array.from({ length: dims }, (_, k) => (k === i ? 1 : 0.01)));

/** The behaviour every VectorStore must show, against the real store. */
export function vectorStoreConformance(name: string, options: VectorStoreSuiteOptions): void {
  describe(`VectorStore conformance: ${name}`, () => {
    const open: VectorStore[] = [];
    const start = async () => {
      const opened = await options.open();
      open.push(opened.store);
      return opened;
    };
    afterEach(async () => {
      for (const store of open.splice(0)) await store.close().catch(() => {});
    });

    it("an empty store finds nothing", async () => {
      const { store } = await start();
      expect(await store.query(e(0), {}, 5)).toEqual([]);
      expect(await store.count()).toBe(0);
    });

    it("finds the nearest vectors first, with cosine scores, at once after upsert", async () => {
      const { store } = await start();
      await store.upsert([
        { id: 1, agent: "a", vector: e(0) },
        { id: 2, agent: "b", vector: e(1) },
        { id: 3, agent: "c", vector: unit([1, 1, 0, 0]) },
      ]);
      const hits = await store.query(e(0), {}, 3);
      expect(hits.map((h) => h.id)).toEqual([1, 3, 2]);
      expect(hits[0]).toMatchObject({ id: 1, agent: "a" });
      expect(hits[0].score).toBeCloseTo(1, 3);
      expect(hits[1].score).toBeCloseTo(Math.SQRT1_2, 1);
      expect(await store.query(e(0), {}, 1)).toHaveLength(1);
      expect(await store.query(e(0), {}, 0)).toEqual([]);
      expect(await store.count()).toBe(3);
    });

    it("upsert replaces a vector by id", async () => {
      const { store } = await start();
      await store.upsert([{ id: 1, agent: "a", vector: e(0) }]);
      await store.upsert([{ id: 1, agent: "a", vector: e(2) }]);
      const [hit] = await store.query(e(2), {}, 1);
      expect(hit.id).toBe(1);
      expect(hit.score).toBeCloseTo(1, 3);
      expect(await store.count()).toBe(1);
    });

    it("a query asked again with the same vector sees every change made in between", async () => {
      const { store } = await start();
      // One object, as the registry hands back for a repeated query text.
      const query = e(0);
      await store.upsert([{ id: 1, agent: "a", vector: e(1) }]);
      expect((await store.query(query, {}, 2)).map((h) => h.id)).toEqual([1]);
      await store.upsert([{ id: 2, agent: "b", vector: e(0) }]);
      expect((await store.query(query, {}, 2)).map((h) => h.id)).toEqual([2, 1]);
      await store.upsert([{ id: 2, agent: "b", vector: e(3) }]);
      const replaced = await store.query(query, {}, 2);
      expect(replaced[0].score).toBeLessThan(0.5);
      await store.delete({ agents: ["a"] });
      expect((await store.query(query, {}, 2)).map((h) => h.id)).toEqual([2]);
      // A caller changing the answer it got does not change the next one.
      (await store.query(query, {}, 2)).length = 0;
      expect((await store.query(query, {}, 2)).map((h) => h.id)).toEqual([2]);
      await store.clear();
      expect(await store.query(query, {}, 2)).toEqual([]);
    });

    it("honours the agent filter exactly", async () => {
      const { store } = await start();
      await store.upsert([
        { id: 1, agent: "a", vector: e(0) },
        { id: 2, agent: "b", vector: e(0) },
        { id: 3, agent: "b", vector: e(1) },
      ]);
      const onlyB = await store.query(e(0), { agents: new Set(["b"]) }, 10);
      expect(onlyB.map((h) => h.id)).toEqual([2, 3]);
      expect(await store.query(e(0), { agents: new Set(["nobody"]) }, 10)).toEqual([]);
      expect(await store.query(e(0), { agents: new Set() }, 10)).toEqual([]);
    });

    it("deletes by agent and by id", async () => {
      const { store } = await start();
      await store.upsert([
        { id: 1, agent: "a", vector: e(0) },
        { id: 2, agent: "a", vector: e(1) },
        { id: 3, agent: "b", vector: e(2) },
        { id: 4, agent: "c", vector: e(3) },
      ]);
      expect(await store.delete({ agents: ["a"] })).toBe(2);
      expect(await store.delete({ ids: [3, 99] })).toBe(1);
      expect(await store.delete({ agents: ["nobody"] })).toBe(0);
      expect((await store.query(e(0), {}, 10)).map((h) => h.id)).toEqual([4]);
      await store.clear();
      expect(await store.count()).toBe(0);
      await store.upsert([{ id: 5, agent: "d", vector: unit([1, 2, 3, 4, 5, 6]) }]);
      expect((await store.query(unit([1, 2, 3, 4, 5, 6]), {}, 1))[0].id).toBe(5);
    });

    it("finds the true neighbours of clustered data (recall@10 against exact search)", async () => {
      const { store } = await start();
      const vectors = clusteredVectors(3000, 48, 60);
      for (let i = 0; i < vectors.length; i += 500) {
        await store.upsert(
          vectors
            .slice(i, i + 500)
            .map((vector, j) => ({ id: i + j, agent: `agent${(i + j) % 300}`, vector })),
        );
      }
      const queries = clusteredVectors(50, 48, 60, 99);
      let found = 0;
      for (const q of queries) {
        const truth = new Set(exactTop(vectors, q, 10));
        for (const hit of await store.query(q, {}, 10)) if (truth.has(hit.id)) found++;
      }
      expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.9);
      const filtered = await store.query(queries[0], { agents: new Set(["agent7", "agent8"]) }, 5);
      expect(filtered.length).toBe(5);
      for (const hit of filtered) expect(["agent7", "agent8"]).toContain(hit.agent);
    });

    it("rejects vectors of another length until cleared", async () => {
      const { store } = await start();
      await store.upsert([{ id: 1, agent: "a", vector: new Float32Array([1, 0]) }]);
      await expect(
        store.upsert([{ id: 2, agent: "a", vector: new Float32Array([1, 0, 0]) }]),
      ).rejects.toThrow(/clear the store when the model changes/);
      await store.clear();
      await store.upsert([{ id: 2, agent: "a", vector: new Float32Array([1, 0, 0]) }]);
      expect(await store.count()).toBe(1);
    });

    it("keeps its vectors across close and reopen (persistent stores)", async () => {
      const { store, reopen } = await start();
      if (!reopen) return;
      await store.upsert([
        { id: 10, agent: "a", vector: e(0) },
        { id: 11, agent: "b", vector: e(1) },
      ]);
      await store.delete({ ids: [11] });
      await store.close();
      const again = await reopen();
      open.push(again);
      expect(await again.count()).toBe(1);
      expect((await again.query(e(0), {}, 5)).map((h) => h.id)).toEqual([10]);
    });

    it("keeps one card vector per agent, scored by agent and never searched (stores with cards)", async () => {
      const { store, reopen } = await start();
      if (!store.upsertCards) return;
      await store.upsert([{ id: 1, agent: "a", vector: e(0) }]);
      await store.upsertCards([
        { agent: "a", vector: e(1) },
        { agent: "b", vector: e(2) },
      ]);
      await store.upsertCards([{ agent: "a", vector: e(2) }]);
      const scores = await store.cardScores!(e(2), ["a", "b", "c"]);
      expect([...scores.keys()].sort()).toEqual(["a", "b"]);
      expect(scores.get("a")).toBeCloseTo(dot(e(2), e(2)), 5);
      expect(scores.get("b")).toBeCloseTo(dot(e(2), e(2)), 5);
      expect((await store.cardScores!(e(0), ["a"])).get("a")).toBeCloseTo(dot(e(0), e(2)), 5);
      // Cards are not docs: the doc search and count do not see them.
      expect((await store.query(e(2), {}, 5)).map((h) => h.id)).toEqual([1]);
      expect(await store.count()).toBe(1);
      expect([...(await store.cardAgents!())].sort()).toEqual(["a", "b"]);
      await store.deleteCards!(["b"]);
      expect([...(await store.cardAgents!())]).toEqual(["a"]);
      if (reopen) {
        await store.close();
        const again = await reopen();
        open.push(again);
        expect([...(await again.cardAgents!())]).toEqual(["a"]);
        expect((await again.cardScores!(e(2), ["a"])).get("a")).toBeCloseTo(dot(e(2), e(2)), 5);
        await again.clear();
        expect((await again.cardAgents!()).size).toBe(0);
        expect((await again.cardScores!(e(2), ["a"])).size).toBe(0);
      } else {
        await store.clear();
        expect((await store.cardAgents!()).size).toBe(0);
      }
    });
  });
}

function dot(a: Float32Array, b: Float32Array): number {
  return a.reduce((sum, x, i) => sum + x * b[i], 0);
}
