// The vector store's share of an uncached semantic DISCOVER, alone (`node bench/registry-search-cost.js`):
// every vector of the bench's embedding cache (part S's 100,000 skill texts and their cards, embedded
// by the default model; bench/embedding-cache.js) in one LocalVectorStore, ten to an agent, searched
// as the registry searches it (unfiltered, 60 docs: a page of 10) with the labelled set's queries,
// embedded by the model with a unique suffix as registry-query-cost.js asks them. Prints, per variant
// and round, the main thread's CPU per search and recall@10 (docs) against exact search over the
// same vectors. BENCH_REG_STORE_DIR keeps the store (its graph is reused by a later run of the same
// count); BENCH_REG_SEARCH_VARIANTS, e.g. "ef=128;ef=96", alternates settings in the one store.
import { existsSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { embeddingCacheFile, readCacheRecords } from "./embedding-cache.js";
import { makeTempDir, REPO_ROOT, removeTempDir } from "./proc.js";
import { benchEmbedderForTools, loadRelevanceSet } from "./registry.js";

const REGISTRY = path.join(REPO_ROOT, "packages", "registry", "dist", "index.js");
const { LocalVectorStore, createEmbedder } = await import(REGISTRY);
const load = () => loadavg()[0].toFixed(1);
const onCpuMs = () => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6;

const chosen = benchEmbedderForTools();
const embedder = createEmbedder(chosen.spec);
const dims = await embedder.load();
const file = embeddingCacheFile(embedder.id, dims);
if (!existsSync(file))
  throw new Error(`no embedding cache ${file}: run part S (bench/registry-scale.js) first`);
const vectors = readCacheRecords(file, dims).map((record) => record.vector);

const keep = process.env.BENCH_REG_STORE_DIR;
const dir = keep ?? makeTempDir("mq9-bench-search");
// BENCH_REG_HNSW="m=16,efConstruction=200" builds the graph with other settings (a fresh store dir).
const hnsw = Object.fromEntries(
  (process.env.BENCH_REG_HNSW ?? "")
    .split(",")
    .filter(Boolean)
    .map((kv) => kv.split("="))
    .map(([k, x]) => [k, Number(x)]),
);
const store = await LocalVectorStore.open({ dataDir: dir, hnsw });
if ((await store.count()) !== vectors.length) {
  await store.clear();
  for (let i = 0; i < vectors.length; i += 1000) {
    await store.upsert(
      vectors
        .slice(i, i + 1000)
        .map((vector, k) => ({ id: i + k, agent: `agent.${Math.floor((i + k) / 10)}`, vector })),
    );
  }
}
const t0 = performance.now();
await store.indexIdle();
console.log(
  `${vectors.length} vectors of ${dims} dimensions indexed (${((performance.now() - t0) / 1000).toFixed(0)} s waited; load ${load()})`,
);

const { QUERIES } = await loadRelevanceSet();
const texts = QUERIES.map((q, i) => `${q.query} #s${i}`);
const queries = await embedder.embed(texts, { purpose: "query" });
await embedder.close();

/** The exact top `k` docs by inner product. */
function exact(query, k) {
  const scored = vectors.map((v, id) => {
    let s = 0;
    for (let d = 0; d < dims; d++) s += v[d] * query[d];
    return [id, s];
  });
  return new Set(
    scored
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([id]) => id),
  );
}
const truth = queries.map((q) => exact(q, 60));
const truth10 = truth.map((t) => new Set([...t].slice(0, 10)));

const variants = (process.env.BENCH_REG_SEARCH_VARIANTS ?? "ef=128").split(";").map((v) =>
  Object.fromEntries(
    v
      .split(",")
      .map((kv) => kv.split("="))
      .map(([k, x]) => [k, Number(x)]),
  ),
);
const own = { ef: store.efSearch, width: store.searchWidth };
const rounds = Number(process.env.BENCH_REG_COST_ROUNDS ?? 3);
const repeats = Number(process.env.BENCH_REG_SEARCH_REPEATS ?? 10);
for (let round = 1; round <= rounds; round++) {
  for (const variant of variants) {
    store.efSearch = variant.ef ?? own.ef;
    store.searchWidth = variant.width ?? own.width;
    let found = 0;
    let found60 = 0;
    const c0 = onCpuMs();
    for (let r = 0; r < repeats; r++) {
      for (const [i, q] of queries.entries()) {
        // A copy each time: the store keeps answers by vector object for repeated queries.
        const hits = await store.query(Float32Array.from(q), {}, 60);
        if (r === 0) for (const hit of hits.slice(0, 10)) if (truth10[i].has(hit.id)) found++;
        if (r === 0) for (const hit of hits) if (truth[i].has(hit.id)) found60++;
      }
    }
    const us = ((onCpuMs() - c0) * 1000) / (repeats * queries.length);
    console.log(
      `round ${round} ${JSON.stringify(variant)}: ${us.toFixed(0)} µs of CPU a search, recall@10 ${(found / (10 * queries.length)).toFixed(3)}, @60 ${(found60 / (60 * queries.length)).toFixed(3)}; load ${load()}`,
    );
  }
}
await store.close();
if (!keep) removeTempDir(dir);
