// The uncached semantic DISCOVER's CPU at part S's scale without embedding 100,000 skill texts
// each run (`node bench/registry-query-cost.js`): a broker in this process whose registry embeds
// skills from the bench's embedding cache (filled by one part S run, bench/registry-scale.js) and
// queries through real embedding worker threads, 10,150 agents x 10 distinct skills registered,
// then uncached queries from a client in a child process at BENCH_REG_CONCURRENCY (32) in flight.
// Variants alternate in the one broker, BENCH_REG_COST_ROUNDS rounds of each
// (BENCH_REG_COST_VARIANTS, e.g. "window=0,ef=128;window=8,ef=128"): `window` is the embedder's
// query window (ms), `ef` the vector store's efSearch, `width` how many times the docs asked for it
// searches at least (2). Prints, per round, QPS, p50/p99, CPU per
// query of the broker's main thread, its other threads (the embedding workers, mostly) and the
// client, the load average, and the model's batched ceiling measured in the same process, on texts
// made as the queries are (before and after each round) and on bench/registry.js's short fixed ones.
// More variant keys: `card` the registry's card weight (its cards are embedded at the default weight
// and kept, so 0 ranks as before cards), `depth` the agents re-ranked by card at least (0: only
// those the page's own vector search finds), `text` the hybrid text weight, `tag=1` makes the uncached queries unique with "#r1v0q123" (see uncachedQuery), `cached=1` repeats the labelled set's 100 queries (each
// asked in the warm-up first) instead of asking new ones. BENCH_REG_COST_RELEVANCE=1 also measures,
// per variant, relevance of semantic DISCOVER (recall@5, recall@1, MRR over the top 10; direct and
// paraphrase queries, strictly and fairly as part S counts them), first of the labelled cards alone
// in a broker of their own (BENCH_REG_COST_ALONE_ONLY=1: only that), then at scale in the measured broker.
// BENCH_REG_COST_TRACE=1 adds the vector searches a query makes, the k they ask for and the main
// thread's CPU in them. BENCH_REG_COST_PROFILE=<file prefix> writes a CPU profile of the broker's main thread during each
// measured round (<prefix>-<round>-<variant>.cpuprofile, for Chrome's DevTools or a script).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { connect } from "@mq9/client";
import { CachedEmbedder } from "./embedding-cache.js";
import { cpuTimes, makeTempDir, REPO_ROOT, removeTempDir, threadCpuTimes } from "./proc.js";
import { benchEmbedderForTools, loadRelevanceSet } from "./registry.js";
import { rightAnswer, syntheticCard } from "./registry-scale.js";
import { syntheticSkills } from "./synthetic-skills.js";

const BROKER = path.join(REPO_ROOT, "packages", "broker", "dist", "index.js");
const REGISTRY = path.join(REPO_ROOT, "packages", "registry", "dist", "index.js");
const load = () => loadavg()[0].toFixed(1);

/**
 * The `i`th uncached query text of a round's variant: a labelled query made unique by a suffix, a
 * number (2-4 tokens; the queries average 14.3 tokens), or when `tagged` "#r1v0q123" as runs before
 * this one did (about 8 tokens of its own: 18.4 a query, which costs the model 1.6 times as much).
 * `tagged` is the variant key `tag=1`, or BENCH_REG_QUERY_SUFFIX=tag for every variant. The model's
 * ceiling is measured on texts made the same way, so that the share compares like with like.
 */
function uncachedQuery(QUERIES, i, round, variant, tagged) {
  const base = QUERIES[i % QUERIES.length].query;
  return tagged ? `${base} #r${round}v${variant}q${i}` : `${base} ${(round * 100 + variant) * 100_000 + i}`;
}

if (process.argv[2] === "client") {
  // The client side, in its own process: warm-up, then the measured run; prints one JSON line.
  const [, , , port, countText, concurrencyText, tag, roundText, variantText] = process.argv;
  const { QUERIES } = await loadRelevanceSet();
  const client = await connect(`nats://127.0.0.1:${port}`, { reconnect: false, requestTimeoutMs: 120_000 });
  const count = Number(countText);
  const concurrency = Number(concurrencyText);
  let unique = 0;
  // A tag starting "cached" asks the same 100 queries over and over (the warm-up asks each first).
  const cached = tag.startsWith("cached");
  const ask = () =>
    client.discover({
      semantic: cached
        ? QUERIES[unique++ % QUERIES.length].query
        : uncachedQuery(QUERIES, unique++, Number(roundText), Number(variantText), tag === "tagged"),
      limit: 10,
    });
  const run = async (n) => {
    const latencies = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < n) {
          const s = performance.now();
          await ask();
          latencies.push(performance.now() - s);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return {
      qps: n / ((performance.now() - t0) / 1000),
      p50: latencies[Math.floor(n * 0.5)],
      p99: latencies[Math.min(n - 1, Math.floor(n * 0.99))],
    };
  };
  await run(Math.min(200, count));
  process.send?.("measuring");
  await new Promise((resolve) => process.once("message", resolve));
  const cpu0 = process.cpuUsage();
  const result = await run(count);
  const cpu = process.cpuUsage(cpu0);
  process.send?.({ ...result, clientUs: (cpu.user + cpu.system) / count });
  await client.close();
  process.exit(0);
}

const count = Number(process.env.BENCH_REG_SCALE_AGENTS ?? 10_000);
const queries = Number(process.env.BENCH_REG_QUERIES ?? 1500);
const concurrency = Number(process.env.BENCH_REG_CONCURRENCY ?? 32);
const rounds = Number(process.env.BENCH_REG_COST_ROUNDS ?? 2);
const variants = (process.env.BENCH_REG_COST_VARIANTS ?? "window=0,ef=128;window=8,ef=128")
  .split(";")
  .map((v) =>
    Object.fromEntries(
      v
        .split(",")
        .map((kv) => kv.split("="))
        .map(([k, x]) => [k, Number(x)]),
    ),
  );

const { ThreadedEmbedder, createEmbedder, registryFactory } = await import(REGISTRY);
const { Broker } = await import(BROKER);
const chosen = benchEmbedderForTools();
const id = createEmbedder(chosen.spec).id;
const threaded = new ThreadedEmbedder({ spec: chosen.spec, id });
const cache = new CachedEmbedder(threaded);
await cache.load();
// Skills from the cache (misses embedded and kept), queries straight through the worker threads.
const embedder = {
  id,
  parallelism: threaded.parallelism,
  load: () => threaded.load(),
  embed: (texts, options) =>
    options?.purpose === "query" ? threaded.embed(texts, options) : cache.embed(texts, options),
  close: async () => {},
};

const { AGENTS, QUERIES } = await loadRelevanceSet();
const relevance = process.env.BENCH_REG_COST_RELEVANCE === "1";
const sets = [
  ["direct", AGENTS.map((a) => ({ query: a.skills[0].name, expect: a.name }))],
  ["paraphrase", QUERIES],
];
const mailboxOf = (card) => card.mailbox ?? `agent.${card.name.replace(/[^a-z0-9]+/g, ".")}`;

/** recall@5 / recall@1 / MRR (top 10) of semantic DISCOVER over the sets, strictly and fairly. */
async function relevanceOf(port) {
  const asker = await connect(`nats://127.0.0.1:${port}`, { reconnect: false, requestTimeoutMs: 120_000 });
  const rows = [];
  for (const [label, queries, hybrid] of sets.flatMap((set) => [set, [`${set[0]} hybrid`, set[1], true]])) {
    const tally = { strict: [0, 0, 0], fair: [0, 0, 0] };
    for (const q of queries) {
      const body = hybrid ? { semantic: q.query, text: q.query } : { semantic: q.query };
      const reply = await asker.discoverPage({ ...body, limit: 10 });
      for (const [kind, fair] of [
        ["strict", false],
        ["fair", true],
      ]) {
        const rank = reply.agents.findIndex((a) => rightAnswer(a, q, fair));
        if (rank >= 0 && rank < 5) tally[kind][0]++;
        if (rank === 0) tally[kind][1]++;
        if (rank >= 0) tally[kind][2] += 1 / (rank + 1);
      }
    }
    const f = ([r5, r1, mrr]) =>
      `${(r5 / queries.length).toFixed(2)} / ${(r1 / queries.length).toFixed(2)} / ${(mrr / queries.length).toFixed(3)}`;
    rows.push(`${label} ${f(tally.strict)} (fair ${f(tally.fair)})`);
  }
  await asker.close();
  return `recall@5 / @1 / MRR: ${rows.join("; ")}`;
}
const skills = syntheticSkills(count * 10);
const mixed = Array.from({ length: count }, (_, i) => syntheticCard(i, skills));
for (const [j, card] of AGENTS.entries()) {
  mixed.splice(Math.floor(((j + 1) * mixed.length) / (AGENTS.length + 1)), 0, card);
}

if (relevance) {
  // The labelled cards alone, each card weight in turn in one broker.
  const aloneDir = makeTempDir("mq9-bench-cost-alone");
  const alone = await Broker.start({ port: 0, dataDir: aloneDir, registry: registryFactory({ embedder }) });
  const c = await connect(`nats://127.0.0.1:${alone.port}`, { reconnect: false, requestTimeoutMs: 600_000 });
  for (const card of AGENTS) await c.register({ ...card, mailbox: mailboxOf(card) });
  await c.close();
  await alone.registry.indexed();
  const ranking = (v) => JSON.stringify({ card: v.card, depth: v.depth, text: v.text });
  const own = {
    card: alone.registry.cardWeight,
    depth: alone.registry.cardRerankDepth,
    text: alone.registry.hybridTextWeight,
  };
  for (const variant of [...new Map(variants.map((v) => [ranking(v), v])).values()]) {
    alone.registry.cardWeight = variant.card ?? own.card;
    alone.registry.cardRerankDepth = variant.depth ?? own.depth;
    alone.registry.hybridTextWeight = variant.text ?? own.text;
    console.log(
      `alone (${AGENTS.length} cards), ${ranking(variant)}: ${await relevanceOf(alone.port)} (load ${load()})`,
    );
  }
  await alone.close();
  removeTempDir(aloneDir);
  // BENCH_REG_COST_ALONE_ONLY=1: the labelled cards' relevance only.
  if (process.env.BENCH_REG_COST_ALONE_ONLY === "1") {
    await threaded.close();
    process.exit(0);
  }
}

const dir = makeTempDir("mq9-bench-cost");
const broker = await Broker.start({ port: 0, dataDir: dir, registry: registryFactory({ embedder }) });
const client = await connect(`nats://127.0.0.1:${broker.port}`, {
  reconnect: false,
  requestTimeoutMs: 600_000,
});
let next = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (next < mixed.length) {
      const card = mixed[next++];
      await client.register({
        ...card,
        mailbox: card.mailbox ?? `agent.${card.name.replace(/[^a-z0-9]+/g, ".")}`,
      });
    }
  }),
);
await client.close();
await broker.registry.indexed();
for (;;) {
  const v = broker.registry.status().vectors;
  if (!v || (!v.building && v.pending === 0)) break;
  await new Promise((resolve) => setTimeout(resolve, 500));
}
console.log(
  `${mixed.length} agents registered and indexed (${cache.misses} skill texts embedded, ${cache.hits} from the cache; load ${load()})`,
);

/**
 * The model's batched ceiling: batches of 32 on every worker, of texts made as the round's queries
 * are (`asked`), or of the short fixed texts bench/registry.js uses (about 12 tokens). Returns texts
 * a second and the CPU of the threads other than the main one (the workers) per text, in µs.
 */
let ceilings = 0;
async function ceiling(asked, tagged) {
  let n = 0;
  const variant = 50 + (ceilings++ % 50);
  const text = () =>
    asked
      ? uncachedQuery(QUERIES, n++, 0, variant, tagged)
      : `ceiling query ${n++} about invoices and flights`;
  const batch = () => Array.from({ length: 32 }, text);
  const lanes = (until) =>
    Promise.all(
      Array.from({ length: threaded.parallelism }, async () => {
        while (n < until) await threaded.embed(batch(), { purpose: "query" });
      }),
    );
  await lanes(128);
  const start = n;
  const cpu0 = cpuTimes(process.pid);
  const t0 = performance.now();
  await lanes(start + 1600);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuTimes(process.pid);
  const workerMs = cpu.allMs - cpu.mainMs - (cpu0.allMs - cpu0.mainMs);
  return { rate: (n - start) / seconds, workerUs: (workerMs * 1000) / (n - start) };
}

/**
 * The store's answer to the uncached search a page of 10 makes (60 docs, no filter) against exact
 * search over the store's own vectors, on the labelled set's paraphrases: recall@10 and @60.
 */
let exactAnswers;
async function searchRecall() {
  const queryVectors = await threaded.embed(
    QUERIES.map((q) => q.query),
    { purpose: "query" },
  );
  if (!exactAnswers) {
    const rows = [...store.stmt.vectors.iterate()].map(({ id, vector }) => ({
      id,
      v: new Float32Array(vector.buffer.slice(vector.byteOffset, vector.byteOffset + vector.byteLength)),
    }));
    exactAnswers = queryVectors.map((q) => {
      const scored = rows.map(({ id, v }) => {
        let sum = 0;
        for (let d = 0; d < v.length; d++) sum += v[d] * q[d];
        return [id, sum];
      });
      const ids = scored.sort((a, b) => b[1] - a[1]).map(([id]) => id);
      return { top10: new Set(ids.slice(0, 10)), top60: new Set(ids.slice(0, 60)) };
    });
  }
  let at10 = 0;
  let at60 = 0;
  for (const [i, q] of queryVectors.entries()) {
    const hits = await store.query(Float32Array.from(q), {}, 60);
    for (const hit of hits.slice(0, 10)) if (exactAnswers[i].top10.has(hit.id)) at10++;
    for (const hit of hits) if (exactAnswers[i].top60.has(hit.id)) at60++;
  }
  const n = queryVectors.length;
  return `search recall@10 ${(at10 / (10 * n)).toFixed(3)}, @60 ${(at60 / (60 * n)).toFixed(3)} against exact`;
}

// The settings under test, set on the running registry's embedder and store between rounds.
const store = broker.registry.vectors;
// BENCH_REG_COST_TRACE=1: per round, the vector searches a query makes, the k they ask for and
// the main thread's CPU in them (the store's query is synchronous inside; the main thread's time on
// a CPU, read from /proc, so that other processes taking the cores do not count).
const trace = { calls: 0, ms: 0, ks: new Map() };
const onCpuMs = () => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6;
if (process.env.BENCH_REG_COST_TRACE === "1") {
  const query = store.query.bind(store);
  store.query = (vector, filter, limit) => {
    const t0 = onCpuMs();
    const result = query(vector, filter, limit);
    trace.ms += onCpuMs() - t0;
    trace.calls++;
    trace.ks.set(limit, (trace.ks.get(limit) ?? 0) + 1);
    return result;
  };
}
const registryDefaults = {
  card: broker.registry.cardWeight,
  depth: broker.registry.cardRerankDepth,
  text: broker.registry.hybridTextWeight,
  ef: store.efSearch,
  width: store.searchWidth,
};
function apply(variant) {
  // A key a variant leaves out is the registry's own setting, not the previous variant's.
  broker.registry.cardWeight = variant.card ?? registryDefaults.card;
  broker.registry.cardRerankDepth = variant.depth ?? registryDefaults.depth;
  broker.registry.hybridTextWeight = variant.text ?? registryDefaults.text;
  if (variant.window !== undefined) threaded.queryWindowMs = variant.window;
  store.efSearch = variant.ef ?? registryDefaults.ef;
  store.searchWidth = variant.width ?? registryDefaults.width;
}

function clientRound(tag, round, v) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(import.meta.url),
        "client",
        String(broker.port),
        String(queries),
        String(concurrency),
        tag,
        String(round),
        String(v),
      ],
      { stdio: ["ignore", "inherit", "inherit", "ipc"] },
    );
    let before;
    child.on("message", (message) => {
      if (message === "measuring") {
        // The embedder numbers its model calls: calls per query gives the mean batch.
        before = {
          total: cpuTimes(process.pid),
          threads: threadCpuTimes(process.pid),
          calls: threaded.batches,
          trace: { calls: trace.calls, ms: trace.ms },
        };
        trace.ks.clear();
        child.send("go");
      } else {
        const after = cpuTimes(process.pid);
        const searches = before.trace;
        // The other threads by name: the embedding workers, V8's helpers (garbage collection), libuv's.
        const byName = new Map();
        for (const [tid, t] of threadCpuTimes(process.pid)) {
          if (Number(tid) === process.pid) continue;
          const ms = t.ms - (before.threads.get(tid)?.ms ?? 0);
          byName.set(t.name, (byName.get(t.name) ?? 0) + ms);
        }
        resolve({
          ...message,
          batch: queries / (threaded.batches - before.calls),
          mainUs: ((after.mainMs - before.total.mainMs) * 1000) / queries,
          otherUs:
            ((after.allMs - after.mainMs - (before.total.allMs - before.total.mainMs)) * 1000) / queries,
          searches:
            trace.calls === searches.calls
              ? ""
              : `; vector searches ${((trace.calls - searches.calls) / queries).toFixed(2)} a query, ${(((trace.ms - searches.ms) * 1000) / queries).toFixed(0)} µs, k ${[...trace.ks].map(([k, n]) => `${k}×${n}`).join(" ")}`,
          threads: [...byName]
            .filter(([, ms]) => ms > 0)
            .map(([name, ms]) => `${name} ${((ms * 1000) / queries).toFixed(0)}`)
            .join(", "),
        });
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => code !== 0 && reject(new Error(`client exited with ${code}`)));
  });
}

for (let round = 1; round <= rounds; round++) {
  for (const [v, variant] of variants.entries()) {
    apply(variant);
    const loadBefore = load();
    const profile = process.env.BENCH_REG_COST_PROFILE;
    const session = profile ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    }
    if (relevance && round === 1) {
      console.log(`at scale, ${JSON.stringify(variant)}: ${await relevanceOf(broker.port)} (load ${load()})`);
      console.log(`at scale, ${JSON.stringify(variant)}: ${await searchRecall()} (load ${load()})`);
    }
    // The ceiling on the round's kind of texts just before and just after it (the machine is shared).
    const tagged = (variant.tag ?? (process.env.BENCH_REG_QUERY_SUFFIX === "tag" ? 1 : 0)) === 1;
    const before = await ceiling(true, tagged);
    const r = await clientRound(variant.cached ? "cached" : tagged ? "tagged" : "uncached", round, v);
    if (session) {
      const { profile: taken } = await session.post("Profiler.stop");
      writeFileSync(`${profile}-${round}-${v}.cpuprofile`, JSON.stringify(taken));
      session.disconnect();
    }
    const after = await ceiling(true, tagged);
    const fixed = await ceiling(false);
    const ceil = (before.rate + after.rate) / 2;
    console.log(
      `round ${round} ${JSON.stringify(variant)}: ${Math.round(r.qps)} QPS @${concurrency} (p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms), CPU µs/query main ${r.mainUs.toFixed(0)} / other threads ${r.otherUs.toFixed(0)} / client ${r.clientUs.toFixed(0)}; load ${loadBefore} -> ${load()}; ${r.batch.toFixed(1)} queries a model call\n` +
        `    ceiling on these texts ${Math.round(before.rate)} / ${Math.round(after.rate)}/s before / after (workers ${before.workerUs.toFixed(0)} / ${after.workerUs.toFixed(0)} µs a text) = ${((100 * r.qps) / ceil).toFixed(0)} %; ` +
        `on the short fixed texts ${Math.round(fixed.rate)}/s (${fixed.workerUs.toFixed(0)} µs) = ${((100 * r.qps) / fixed.rate).toFixed(0)} %\n` +
        `    other threads, µs/query: ${r.threads}${r.searches}`,
    );
  }
}
await broker.close();
await threaded.close();
removeTempDir(dir);
