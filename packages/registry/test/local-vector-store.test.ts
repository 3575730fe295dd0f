import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { LocalVectorStore } from "../src/index.js";
import {
  clusteredVectors,
  freshDirs,
  seededRandom,
  unit,
  vectorStoreConformance,
} from "./vector-store-conformance.js";

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0);

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

  it("stores identical vectors once: every replica is found, filtered, deleted and reloaded on its own", async () => {
    const dataDir = freshDir();
    const distinct = clusteredVectors(200, 32, 20, 77);
    // 10 replicas of each of 200 vectors: doc id r*200+v belongs to agent r<v>.
    const items = [];
    for (let r = 0; r < 10; r++) {
      for (let v = 0; v < 200; v++) items.push({ id: r * 200 + v, agent: `r${r}-${v}`, vector: distinct[v] });
    }
    // exactFilterLimit 0: filtered queries go through the graph too.
    const store = await LocalVectorStore.open({ dataDir, annThreshold: 500, exactFilterLimit: 0 });
    await store.upsert(items);
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: 2000, points: 200, pending: 0 });

    const replicasOf7 = (await store.query(distinct[7], {}, 10)).map((hit) => hit.id).sort((a, b) => a - b);
    expect(replicasOf7).toEqual(Array.from({ length: 10 }, (_, r) => r * 200 + 7));
    const only = await store.query(distinct[7], { agents: new Set(["r3-7", "r9-8"]) }, 2);
    expect(only.map((hit) => hit.agent)).toEqual(["r3-7", "r9-8"]);

    // One replica changes its vector: it leaves the shared point, the others stay on it.
    const moved = clusteredVectors(1, 32, 1, 4243)[0];
    await store.upsert([{ id: 3 * 200 + 7, agent: "r3-7", vector: moved }]);
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: 2000, points: 201 });
    expect((await store.query(moved, {}, 1))[0].id).toBe(3 * 200 + 7);
    expect((await store.query(distinct[7], {}, 20)).filter((hit) => hit.score > 0.9999)).toHaveLength(9);

    // Deleting every replica of vector 8 removes its point; a new doc with it makes a new one.
    await store.delete({ ids: Array.from({ length: 10 }, (_, r) => r * 200 + 8) });
    expect(store.status()).toMatchObject({ indexed: 1990, points: 200 });
    expect((await store.query(distinct[8], {}, 1))[0].score).toBeLessThan(0.9999);
    await store.upsert([{ id: 9000, agent: "back", vector: distinct[8] }]);
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: 1991, points: 201 });
    await store.close();

    // Reopened, the saved graph's points are matched to their docs again, and new replicas join them.
    const reopened = await LocalVectorStore.open({ dataDir, annThreshold: 500 });
    expect(reopened.status()).toMatchObject({ indexed: 1991, points: 201, pending: 0 });
    await reopened.upsert([{ id: 9001, agent: "late-replica", vector: distinct[7] }]);
    await reopened.indexIdle();
    expect(reopened.status()).toMatchObject({ indexed: 1992, points: 201 });
    const again = (await reopened.query(distinct[7], {}, 20)).filter((hit) => hit.score > 0.9999);
    expect(again.map((hit) => hit.agent).sort()).toEqual(
      ["late-replica", ...[0, 1, 2, 4, 5, 6, 7, 8, 9].map((r) => `r${r}-7`)].sort(),
    );
    expect((await reopened.query(distinct[8], {}, 1))[0].agent).toBe("back");
    // A small filter is scanned exactly, each shared vector scored once for all its docs.
    const filtered = await reopened.query(
      distinct[7],
      { agents: new Set(["r1-7", "r2-7", "r1-9", "late-replica"]) },
      4,
    );
    expect(
      filtered
        .slice(0, 3)
        .map((hit) => hit.agent)
        .sort(),
    ).toEqual(["late-replica", "r1-7", "r2-7"]);
    expect(filtered[2].score).toBeCloseTo(1, 5);
    expect(filtered[3]).toMatchObject({ agent: "r1-9" });
    expect(filtered[3].score).toBeCloseTo(dot(distinct[7], distinct[9]), 5);
    await reopened.close();
  });

  it("answers a repeated query exactly as a fresh one, while the graph is being built and after", async () => {
    const vectors = clusteredVectors(3000, 32, 40, 91);
    // Short slices: the build moves points into the graph over many turns, between the queries.
    const store = await LocalVectorStore.open({ dataDir: freshDir(), annThreshold: 500, buildSliceMs: 0.2 });
    await store.upsert(vectors.map((vector, id) => ({ id, agent: `a${id % 100}`, vector })));
    const repeated = vectors[17];
    let seenPending = false;
    while (store.status().pending > 0 || store.status().building) {
      seenPending ||= store.status().pending > 0;
      const fresh = Float32Array.from(repeated);
      expect(await store.query(repeated, {}, 30)).toEqual(await store.query(fresh, {}, 30));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(seenPending).toBe(true);
    expect(await store.query(repeated, {}, 30)).toEqual(
      await store.query(Float32Array.from(repeated), {}, 30),
    );
    await store.close();
  });
});

describe("LocalVectorStore — lone points among look-alikes", () => {
  // Templated look-alikes in tight clusters sharing one common direction, and a few vectors unlike
  // any other; each query leans towards one lone vector, which is its exact nearest, while the
  // look-alikes score nearly as well (the shape that hides a hand-written card among thousands
  // of generated ones from a graph search).
  const dims = 48;
  const random = seededRandom(5);
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const common = Array.from({ length: dims }, gauss);
  const centres = Array.from({ length: 40 }, () => Array.from({ length: dims }, gauss));
  const lookAlikes = Array.from({ length: 6000 }, (_, i) =>
    unit(centres[i % 40].map((c, k) => c + common[k] + 0.25 * gauss())),
  );
  const lone = Array.from({ length: 30 }, () => unit(Array.from({ length: dims }, gauss)));
  const queries = lone.map((l, j) =>
    unit(Array.from(l, (x, k) => 0.7 * x + (0.3 * (centres[j % 40][k] + common[k])) / 8)),
  );
  const items = lookAlikes.map((vector, id) => ({ id, agent: `templated-${id}`, vector }));
  lone.forEach((vector, j) => {
    items.splice(Math.floor(((j + 1) * items.length) / 31), 0, {
      id: 10_000 + j,
      agent: `lone-${j}`,
      vector,
    });
  });
  const firstAgents = async (store: LocalVectorStore) =>
    Promise.all(queries.map(async (q) => (await store.query(q, {}, 5))[0]?.agent));

  it("finds each lone vector first, as exact search does, however narrow the graph search", async () => {
    for (const [j, q] of queries.entries()) {
      const best = Math.max(...lookAlikes.map((v) => dot(v, q)));
      expect(dot(lone[j], q)).toBeGreaterThan(best);
    }
    const dataDir = freshDir();
    const options = { dataDir, annThreshold: 500, hnsw: { efSearch: 16 } };
    const store = await LocalVectorStore.open(options);
    await store.upsert(items);
    await store.indexIdle();
    const expected = lone.map((_, j) => `lone-${j}`);
    expect(await firstAgents(store)).toEqual(expected);
    await store.close();
    // The lone points are saved with the graph and kept apart again after a restart.
    const reopened = await LocalVectorStore.open(options);
    expect(reopened.status()).toMatchObject({ indexed: 6030, pending: 0 });
    expect(await firstAgents(reopened)).toEqual(expected);
    // A lone vector deleted is gone from both searches.
    await reopened.delete({ agents: ["lone-3"] });
    expect((await reopened.query(queries[3], {}, 5)).map((h) => h.agent)).not.toContain("lone-3");
    await reopened.close();
  });
});

describe("LocalVectorStore — a graph saved by an older version", () => {
  it.each([
    ["its space", "index_space"],
    ["its lone points", "isolated_points"],
  ])("is rebuilt when it was saved without %s, and answers as before", async (_, key) => {
    const dataDir = freshDir();
    const vectors = clusteredVectors(1500, 32, 30, 11);
    const store = await LocalVectorStore.open({ dataDir, annThreshold: 500 });
    await store.upsert(vectors.map((vector, id) => ({ id, agent: `a${id % 50}`, vector })));
    await store.indexIdle();
    const before = await store.query(vectors[3], {}, 5);
    await store.close();
    // What an older version left: the graph file, and no such entry in the meta table.
    const db = new Database(join(dataDir, "vectors.db"));
    db.prepare("DELETE FROM meta WHERE key = ?").run(key);
    db.close();

    const reopened = await LocalVectorStore.open({ dataDir, annThreshold: 500 });
    // Not reused: the graph is built again (in the background, so some points may be in already).
    const { indexed, pending } = reopened.status();
    expect(indexed + pending).toBe(1500);
    expect(pending).toBeGreaterThan(0);
    await reopened.indexIdle();
    expect(reopened.status()).toMatchObject({ indexed: 1500, pending: 0 });
    const after = await reopened.query(vectors[3], {}, 5);
    expect(after.map((h) => h.id)).toEqual(before.map((h) => h.id));
    for (const [i, hit] of after.entries()) expect(hit.score).toBeCloseTo(before[i].score, 6);
    await reopened.close();
    const saved = new Database(join(dataDir, "vectors.db"));
    expect(saved.prepare("SELECT key FROM meta WHERE key = ?").get(key)).toBeDefined();
    saved.close();
  });
});

/**
 * How the store's per-agent ranking agrees with an exact search over the same vectors, as the
 * registry reads it (need * 4 + 16 docs, each agent's best hit): the mean share of the exact
 * top 5 agents found, and the share of queries whose first agent is the exact one.
 */
async function agreementWithExact(
  store: LocalVectorStore,
  vectors: Float32Array[],
  agentOf: (id: number) => string,
  queries: Float32Array[],
  onHit?: (hit: { id: number; score: number }, query: Float32Array) => void,
): Promise<{ overlap: number; sameFirst: number }> {
  let overlap = 0;
  let sameFirst = 0;
  for (const query of queries) {
    const best = new Map<string, number>();
    vectors.forEach((v, id) => {
      const s = dot(v, query);
      if (!(best.get(agentOf(id))! >= s)) best.set(agentOf(id), s);
    });
    const exact = [...best].sort((a, b) => b[1] - a[1]).map(([agent]) => agent);
    const found: string[] = [];
    for (const hit of await store.query(query, {}, 5 * 4 + 16)) {
      if (!found.includes(hit.agent)) found.push(hit.agent);
      onHit?.(hit, query);
    }
    overlap += found.slice(0, 5).filter((a) => exact.slice(0, 5).includes(a)).length / 5;
    if (found[0] === exact[0]) sameFirst++;
  }
  return { overlap: overlap / queries.length, sameFirst: sameFirst / queries.length };
}

describe("LocalVectorStore — per-agent ranking through the approximate index", () => {
  it("ranks agents (by their best skill) as an exact search over the same vectors does", async () => {
    // 2,000 agents x 10 skills in 200 clusters: the registry asks for need * 4 + 16 docs and keeps
    // each agent's first (best) hit; through HNSW that must give the exact search's top 5 agents.
    const dims = 48;
    const vectors = clusteredVectors(20_000, dims, 200);
    const agentOf = (id: number) => `a${Math.floor(id / 10)}`;
    const store = await LocalVectorStore.open({ dataDir: ":memory:" });
    await store.upsert(vectors.map((vector, id) => ({ id, agent: agentOf(id), vector })));
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: 20_000, pending: 0 });
    const queries = clusteredVectors(100, dims, 200, 99);
    const { overlap, sameFirst } = await agreementWithExact(store, vectors, agentOf, queries);
    expect(overlap).toBeGreaterThanOrEqual(0.95);
    expect(sameFirst).toBeGreaterThanOrEqual(0.95);
    await store.close();
  }, 120_000);
});

/**
 * Vectors shaped like sentence embeddings of many look-alike skills and a few distinct real cards:
 * all in a narrow cone around one common direction; the mass made of a few template directions;
 * every 400th doc starts a card of 3 skills about a direction of its own, a sparse region.
 */
function coneWithSparseCards(seed: number) {
  const dims = 64;
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  const direction = () => Array.from({ length: dims }, gauss);
  const common = unit(direction());
  const templates = Array.from({ length: 24 }, () => unit(direction()));
  const vectors: Float32Array[] = [];
  const agents: string[] = [];
  const cards: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const v = Array.from(common, (c) => 2.2 * c);
    for (let j = 0; j < 3; j++) {
      const t = templates[Math.floor(random() * templates.length)];
      const w = random();
      for (let k = 0; k < dims; k++) v[k] += w * t[k];
    }
    vectors.push(unit(v.map((x) => x + 0.15 * gauss())));
    agents.push(`mass${Math.floor(i / 10)}`);
    if ((i + 1) % 400 === 0) {
      const own = unit(direction());
      cards.push(vectors.length);
      for (let s = 0; s < 3; s++) {
        vectors.push(unit(Array.from(common, (c, k) => 3 * c + own[k] + 0.3 * gauss())));
        agents.push(`card${cards.length}`);
      }
    }
  }
  const queries = cards.map((id) => unit(Array.from(vectors[id], (x) => x + 0.08 * gauss())));
  return { vectors, agents, queries };
}

describe("LocalVectorStore — queries about a sparse region", () => {
  it("ranks agents as exact search does when the answer sits apart from a dense mass", async () => {
    const { vectors, agents, queries } = coneWithSparseCards(3);
    const store = await LocalVectorStore.open({ dataDir: ":memory:" });
    await store.upsert(vectors.map((vector, id) => ({ id, agent: agents[id], vector })));
    await store.indexIdle();
    expect(store.status()).toMatchObject({ indexed: vectors.length, pending: 0 });
    const { overlap, sameFirst } = await agreementWithExact(
      store,
      vectors,
      (id) => agents[id],
      queries,
      // Scores stay exact inner products of the original vectors.
      (hit, query) => expect(hit.score).toBeCloseTo(dot(vectors[hit.id], query), 5),
    );
    expect(sameFirst).toBeGreaterThanOrEqual(0.95);
    expect(overlap).toBeGreaterThanOrEqual(0.9);
    await store.close();
  }, 180_000);
});
