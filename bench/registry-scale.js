// Relevance at scale (`node bench/run.js --registry`, part S; BENCH_REG_SCALE_AGENTS=0 skips it):
// the 150 labelled English cards alone in one broker, then mixed into BENCH_REG_SCALE_AGENTS synthetic
// agents x 10 distinct skills (bench/synthetic-skills.js) in another. Both answer the same direct
// queries (each card's first skill name) and paraphrases (the labelled set), semantic and hybrid,
// recall@5 and recall@1; beside them, on the very same vectors, an exact search followed by the same
// per-agent ranking (an agent scores as its best skill). At scale each figure is given twice:
// strictly (only the labelled agent is right) and fairly (a synthetic agent whose skill does the
// asked job, bench/synthetic-judgements.js, is right too). Also: how long a semantic DISCOVER takes
// right after the last REGISTER, while skills are still being embedded, and what it says is pending.
// Skill vectors are cached on disk by embedder id and text hash (bench/embedding-cache.js), so only
// the first run at a scale pays for embedding 100,000 texts.
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { connect } from "@mq9/client";
import { CachedEmbedder } from "./embedding-cache.js";
import { makeTempDir, progress, REPO_ROOT, removeTempDir } from "./proc.js";
import { doesTheJob } from "./synthetic-judgements.js";
import { syntheticSkills } from "./synthetic-skills.js";

const BROKER = path.join(REPO_ROOT, "packages", "broker", "dist", "index.js");
const REGISTRY = path.join(REPO_ROOT, "packages", "registry", "dist", "index.js");
const INDEXER = path.join(REPO_ROOT, "packages", "registry", "dist", "embedding", "embedding-indexer.js");

const load = () => `load ${loadavg()[0].toFixed(1)}`;
const mailboxOf = (name) => `agent.${name.replace(/[^a-z0-9]+/g, ".")}`;

/**
 * The bench's embedder (`chosen`, from BENCH_REG_EMBEDDER: the default model unless set) in worker
 * threads as the registry runs it, wrapped in the on-disk cache; BENCH_REG_SCALE_EMBEDDER=static
 * swaps in the static token table distilled from USE-lite.
 */
async function cachedEmbedder(chosen) {
  const { StaticEmbedder, ThreadedEmbedder, createEmbedder } = await import(REGISTRY);
  const staticTable = process.env.BENCH_REG_SCALE_EMBEDDER === "static";
  const inner = staticTable
    ? new StaticEmbedder()
    : new ThreadedEmbedder({ spec: chosen.spec, id: createEmbedder(chosen.spec).id });
  const embedder = new CachedEmbedder(inner);
  await embedder.load();
  embedder.label = staticTable ? `static embedder (${inner.id})` : chosen.label;
  return embedder;
}

/** A card's skill as the registry stores it for embedding (the doc embeddingText reads). */
export function skillDocOf(card, skill) {
  return {
    agentName: card.name,
    agentDescription: card.description,
    skillName: skill.name,
    skillDescription: skill.description,
    tags: skill.tags.join(" "),
    examples: (skill.examples ?? []).join("\n"),
  };
}

export function syntheticCard(i, skills) {
  const own = skills.slice(i * 10, i * 10 + 10);
  return {
    name: `synthetic-${i}`,
    description: `${own[0].description}; ${own[1].description}`,
    mailbox: `synthetic.${i}.inbox`,
    version: "1.0.0",
    tags: [own[0].tags[0]],
    skills: own.map((s, k) => ({ ...s, id: `skill-${k}` })),
  };
}

/** Per-query ranks (0-based; -1 when not in the top 5) of the expected agent. */
function recall(ranks) {
  const at = (n) => ranks.filter((r) => r >= 0 && r < n).length / ranks.length;
  return { at5: at(5), at1: at(1) };
}

const cell = (r) => `${r.at5.toFixed(2)} / ${r.at1.toFixed(2)}`;

/** Replies that carried a warning (a full-text fallback, skills still pending), by text. */
const warnings = new Map();

/**
 * Whether an answer is right for a query: the labelled agent, or (`fair`) a synthetic agent with a
 * skill that does the asked job (bench/synthetic-judgements.js).
 */
export function rightAnswer(card, { query, expect }, fair) {
  if (card.name === expect) return true;
  return (
    fair &&
    card.name.startsWith("synthetic-") &&
    (card.skills ?? []).some((skill) => doesTheJob(expect, query, skill))
  );
}

/** Ranks of the first right answer, strictly (the labelled agent only) and fairly. */
async function brokerRanks(client, queries, mode) {
  const strict = [];
  const fair = [];
  for (const q of queries) {
    const body = mode === "hybrid" ? { semantic: q.query, text: q.query } : { semantic: q.query };
    const reply = await client.discoverPage({ ...body, limit: 5 });
    if (reply.warning) warnings.set(reply.warning, (warnings.get(reply.warning) ?? 0) + 1);
    strict.push(reply.agents.findIndex((a) => rightAnswer(a, q, false)));
    fair.push(reply.agents.findIndex((a) => rightAnswer(a, q, true)));
  }
  return { strict, fair };
}

/**
 * Exact search over `vectors` (one per skill, `owner[i]` its agent), then the broker's per-agent rule:
 * an agent ranks by its best skill, ties to the lower mailbox.
 */
function exactRanks(queryVectors, queries, vectors, owner, dims, cards, fair) {
  return queries.map((asked, q) => {
    const query = queryVectors[q];
    const best = new Map();
    for (let i = 0; i < vectors.length; i++) {
      const v = vectors[i];
      let s = 0;
      for (let k = 0; k < dims; k++) s += v[k] * query[k];
      const o = owner[i];
      const was = best.get(o);
      if (was === undefined || s > was) best.set(o, s);
    }
    const top = [...best.entries()]
      .sort((a, b) => b[1] - a[1] || (mailboxOf(a[0]) < mailboxOf(b[0]) ? -1 : 1))
      .slice(0, 5)
      .map(([name]) => name);
    return top.findIndex((name) => rightAnswer(cards.get(name), asked, fair));
  });
}

async function withBroker(embedder, body) {
  const { Broker } = await import(BROKER);
  const { registryFactory } = await import(REGISTRY);
  const dir = makeTempDir("mq9-bench-scale");
  const broker = await Broker.start({
    port: 0,
    dataDir: dir,
    registry: registryFactory({
      embedder: embedder.shared(),
      // BENCH_REG_EF_SEARCH: the vector store's search breadth (the store's own default unless set).
      ...(process.env.BENCH_REG_EF_SEARCH ? { efSearch: Number(process.env.BENCH_REG_EF_SEARCH) } : {}),
    }),
  });
  const client = await connect(`nats://127.0.0.1:${broker.port}`, {
    reconnect: false,
    requestTimeoutMs: 600_000,
  });
  try {
    return await body(broker, client);
  } finally {
    await client.close();
    await broker.close();
    removeTempDir(dir);
  }
}

async function idle(broker) {
  await broker.registry.indexed();
  for (;;) {
    const vectors = broker.registry.status().vectors;
    // Below the store's ANN threshold nothing is indexed and every vector stays in the exact scan.
    if (!vectors || (!vectors.building && (vectors.indexed === 0 || vectors.pending === 0))) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function partScaleRelevance(cfg, out, { loadRelevanceSet, chosen }) {
  const { embeddingText } = await import(INDEXER);
  const { AGENTS, QUERIES } = await loadRelevanceSet();
  const sets = [
    ["direct", AGENTS.map((a) => ({ query: a.skills[0].name, expect: a.name }))],
    ["paraphrase", QUERIES],
  ];
  const count = cfg.scaleAgents;
  progress(`scale relevance: generating ${count * 10} distinct synthetic skills`);
  const skills = syntheticSkills(count * 10);
  const synthetic = Array.from({ length: count }, (_, i) => syntheticCard(i, skills));
  // The labelled cards spread through the registration order, as real ones would arrive.
  const mixed = [...synthetic];
  for (const [j, card] of AGENTS.entries()) {
    mixed.splice(Math.floor(((j + 1) * mixed.length) / (AGENTS.length + 1)), 0, card);
  }
  const embedder = await cachedEmbedder(chosen);
  const rows = [];
  try {
    progress("scale relevance: the labelled cards alone");
    await withBroker(embedder, async (broker, client) => {
      for (const card of AGENTS) await client.register({ ...card, mailbox: mailboxOf(card.name) });
      await idle(broker);
      for (const [label, queries] of sets) {
        rows.push([
          `alone, ${label}`,
          (await brokerRanks(client, queries, "semantic")).strict,
          (await brokerRanks(client, queries, "hybrid")).strict,
        ]);
      }
    });
    let during = "";
    progress(`scale relevance: ${mixed.length} agents (${embedder.vectors.size} vectors cached)`);
    await withBroker(embedder, async (broker, client) => {
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < mixed.length) {
            const card = mixed[next++];
            await client.register({ ...card, mailbox: card.mailbox ?? mailboxOf(card.name) });
          }
        }),
      );
      const registerS = (performance.now() - t0) / 1000;
      // Semantic DISCOVER while the backlog is still being embedded: answered from what is indexed.
      const asked = performance.now();
      const reply = await client.discoverPage({ semantic: "reconcile bank statements", limit: 5 });
      during = `semantic DISCOVER right after the last REGISTER (${registerS.toFixed(1)} s for ${mixed.length}): answered in ${(performance.now() - asked).toFixed(0)} ms with ${reply.agents.length} agents, pending_skills ${reply.pending_skills ?? 0} (${load()})`;
      progress("scale relevance: waiting for every skill to be embedded and indexed");
      const t1 = performance.now();
      await idle(broker);
      during += `; all searchable ${((performance.now() - t1) / 1000).toFixed(0)} s later (${embedder.misses} texts embedded this run, ${embedder.hits} from the cache)`;
      for (const [label, queries] of sets) {
        progress(`scale relevance: ${label} queries`);
        const semantic = await brokerRanks(client, queries, "semantic");
        const hybrid = await brokerRanks(client, queries, "hybrid");
        rows.push([`at scale, ${label}`, semantic.strict, hybrid.strict]);
        rows.push([`at scale, ${label}, fair`, semantic.fair, hybrid.fair]);
      }
    });
    progress("scale relevance: exact search over the same vectors");
    const texts = [];
    const owner = [];
    for (const card of mixed) {
      for (const s of card.skills) {
        texts.push(embeddingText(skillDocOf(card, s)));
        owner.push(card.name);
      }
    }
    const vectors = await embedder.embed(texts);
    const cards = new Map(mixed.map((card) => [card.name, card]));
    for (const [label, queries] of sets) {
      const queryVectors = await embedder.embed(
        queries.map((q) => q.query),
        { purpose: "query" },
      );
      rows.push([
        `exact + per-agent, ${label}`,
        exactRanks(queryVectors, queries, vectors, owner, embedder.dims, cards, false),
      ]);
      rows.push([
        `exact + per-agent, ${label}, fair`,
        exactRanks(queryVectors, queries, vectors, owner, embedder.dims, cards, true),
      ]);
    }
    out.push("");
    out.push(
      `relevance at scale — the ${AGENTS.length} labelled cards alone, and mixed into ${count.toLocaleString("en-US")} synthetic agents x 10 distinct skills (${(count * 10 + AGENTS.reduce((n, a) => n + a.skills.length, 0)).toLocaleString("en-US")} skill vectors), ${embedder.label} (${load()})`,
    );
    out.push(`  recall@5 / recall@1 (target: at scale within 0.05 of alone; broker >= exact + per-agent)`);
    out.push(
      "  fair: a synthetic agent whose skill does the asked job (bench/synthetic-judgements.js) counts as a right answer",
    );
    out.push(`  ${"".padEnd(36)} ${"semantic".padStart(12)} ${"hybrid".padStart(12)}`);
    for (const [label, semantic, hybrid] of rows) {
      out.push(
        `  ${label.padEnd(36)} ${cell(recall(semantic)).padStart(12)} ${hybrid ? cell(recall(hybrid)).padStart(12) : "-".padStart(12)}`,
      );
    }
    out.push(`  ${during}`);
    for (const [text, n] of warnings) out.push(`  ${n} replies warned: ${text}`);
  } finally {
    await embedder.close();
  }
}
