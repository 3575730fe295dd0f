// How an agent's score is built from its skills' scores, measured offline on part S's vectors
// (`node bench/registry-agent-scores.js`): the 150 labelled cards mixed into BENCH_REG_SCALE_AGENTS
// synthetic agents x 10 distinct skills (as bench/registry-scale.js builds them), exact search over
// every skill vector, then each ranking rule below; recall@5 / recall@1 of the direct and paraphrase
// queries, strictly (the labelled agent only) and fairly (a synthetic agent that does the asked job
// counts as a right answer, bench/synthetic-judgements.js). Vectors come from the bench's embedding
// cache (bench/embedding-cache.js), so after one part S run only the card texts and the query
// variants are embedded. BENCH_REG_SCORES_DUMP=1 prints, for every query the strict rule misses,
// the agents ranked above the labelled one and their best skill (what the judgements were made from).
import { loadavg } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { CachedEmbedder } from "./embedding-cache.js";
import { REPO_ROOT } from "./proc.js";
import { benchEmbedderForTools, loadRelevanceSet } from "./registry.js";
import { skillDocOf, syntheticCard } from "./registry-scale.js";
import { doesTheJob } from "./synthetic-judgements.js";
import { syntheticSkills } from "./synthetic-skills.js";

const REGISTRY = path.join(REPO_ROOT, "packages", "registry", "dist", "index.js");
const INDEXER = path.join(REPO_ROOT, "packages", "registry", "dist", "embedding", "embedding-indexer.js");
const count = Number(process.env.BENCH_REG_SCALE_AGENTS ?? 10_000);
const load = () => `load ${loadavg()[0].toFixed(1)}`;

const { ThreadedEmbedder, createEmbedder } = await import(REGISTRY);
const { embeddingText, cardText } = await import(INDEXER);
const chosen = benchEmbedderForTools();
const embedder = new CachedEmbedder(
  new ThreadedEmbedder({ spec: chosen.spec, id: createEmbedder(chosen.spec).id }),
);
await embedder.load();
const dims = embedder.dims;

const { AGENTS, QUERIES } = await loadRelevanceSet();
const sets = [
  ["direct", AGENTS.map((a) => ({ query: a.skills[0].name, expect: a.name }))],
  ["paraphrase", QUERIES],
];
const skills = syntheticSkills(count * 10);
const synthetic = Array.from({ length: count }, (_, i) => syntheticCard(i, skills));
const mixed = [...synthetic];
for (const [j, card] of AGENTS.entries()) {
  mixed.splice(Math.floor(((j + 1) * mixed.length) / (AGENTS.length + 1)), 0, card);
}

const texts = [];
const owner = [];
const skillOf = [];
for (const [a, card] of mixed.entries()) {
  for (const s of card.skills) {
    texts.push(embeddingText(skillDocOf(card, s)));
    owner.push(a);
    skillOf.push(s);
  }
}
console.log(
  `${mixed.length} agents, ${texts.length} skill texts; embedding what the cache lacks (${load()})`,
);
const t0 = performance.now();
const vectors = await embedder.embed(texts);
// The card's own words (its description), one vector per agent: what a card-level score would use.
const cardVectors = await embedder.embed(mixed.map((card) => card.description));
// The card as the registry embeds it (name and description); a synthetic agent's name carries no meaning.
const namedVectors = await embedder.embed(mixed.map((card) => cardText(card.name, card.description)));
console.log(
  `  ${embedder.misses} texts embedded, ${embedder.hits} from the cache, ${((performance.now() - t0) / 1000).toFixed(0)} s`,
);

const flat = new Float32Array(vectors.length * dims);
for (const [i, v] of vectors.entries()) flat.set(v, i * dims);
const cardFlat = new Float32Array(cardVectors.length * dims);
for (const [i, v] of cardVectors.entries()) cardFlat.set(v, i * dims);
const namedFlat = new Float32Array(namedVectors.length * dims);
for (const [i, v] of namedVectors.entries()) namedFlat.set(v, i * dims);

function scoresOf(query, matrix, rows) {
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const base = r * dims;
    for (let k = 0; k < dims; k++) s += matrix[base + k] * query[k];
    out[r] = s;
  }
  return out;
}

/** Per agent: its best skill's score, the second best, and its card's score. */
function agentScores(query) {
  const skill = scoresOf(query, flat, vectors.length);
  const card = scoresOf(query, cardFlat, mixed.length);
  const named = scoresOf(query, namedFlat, mixed.length);
  const best = new Float32Array(mixed.length).fill(-2);
  const second = new Float32Array(mixed.length).fill(-2);
  const bestSkill = new Int32Array(mixed.length);
  for (let i = 0; i < skill.length; i++) {
    const a = owner[i];
    if (skill[i] > best[a]) {
      second[a] = best[a];
      best[a] = skill[i];
      bestSkill[a] = i;
    } else if (skill[i] > second[a]) second[a] = skill[i];
  }
  return { best, second, card, named, bestSkill };
}

/**
 * Ranking rules: an agent's score from its best skill (b), second best (s, -2 when none), card
 * (c, its description) and named card (n, name and description, as the registry embeds it).
 */
const RULES = [
  ["best skill (today)", (b) => b],
  ["card only", (_b, _s, c) => c],
  ["max(best skill, card)", (b, _s, c) => Math.max(b, c)],
  ["0.9 best + 0.1 card", (b, _s, c) => 0.9 * b + 0.1 * c],
  ["0.8 best + 0.2 card", (b, _s, c) => 0.8 * b + 0.2 * c],
  ["0.7 best + 0.3 card", (b, _s, c) => 0.7 * b + 0.3 * c],
  ["0.5 best + 0.5 card", (b, _s, c) => 0.5 * b + 0.5 * c],
  ["best + 0.1 second", (b, s) => b + 0.1 * Math.max(0, s)],
  ["0.8 best + 0.2 named card", (b, _s, _c, n) => 0.8 * b + 0.2 * n],
  ["0.7 best + 0.3 named card", (b, _s, _c, n) => 0.7 * b + 0.3 * n],
  ["0.6 best + 0.4 named card", (b, _s, _c, n) => 0.6 * b + 0.4 * n],
];

function rankOf(scores, expectIndex, fairSet) {
  // Rank of the first right answer: agents above it are counted (ties to the lower index, as sorted).
  const target = scores[expectIndex];
  let strict = 0;
  for (let a = 0; a < scores.length; a++) if (scores[a] > target) strict++;
  let fair = strict;
  if (fairSet.size > 0) {
    // The best-scoring right answer among the fair ones, if above the labelled agent.
    let bestFair = target;
    for (const a of fairSet) if (scores[a] > bestFair) bestFair = scores[a];
    fair = 0;
    for (let a = 0; a < scores.length; a++) if (scores[a] > bestFair) fair++;
  }
  return { strict, fair };
}

const QUERY_FORMS = [
  ["as asked", (q) => q],
  ['"find an agent that can …"', (q) => `find an agent that can ${q.charAt(0).toLowerCase()}${q.slice(1)}`],
];

const indexOf = new Map(mixed.map((card, i) => [card.name, i]));
const labelled = [...mixed.keys()].filter((a) => !mixed[a].name.startsWith("synthetic-"));
const dump = process.env.BENCH_REG_SCORES_DUMP === "1";
const lines = [];
for (const [formLabel, form] of QUERY_FORMS) {
  for (const [label, queries] of sets) {
    const queryVectors = await embedder.embed(
      queries.map((q) => form(q.query)),
      { purpose: "query" },
    );
    const tallies = RULES.map(() => ({ s5: 0, s1: 0, f5: 0, f1: 0, a5: 0, a1: 0 }));
    let judged = 0;
    for (const [q, { query, expect }] of queries.entries()) {
      const { best, second, card, named, bestSkill } = agentScores(queryVectors[q]);
      const e = indexOf.get(expect);
      // Synthetic agents whose skills do the asked job (judged by their action and object).
      const fairSet = new Set();
      for (let a = 0; a < mixed.length; a++) {
        if (!mixed[a].name.startsWith("synthetic-")) continue;
        if (mixed[a].skills.some((s) => doesTheJob(expect, query, s))) fairSet.add(a);
      }
      if (fairSet.size > 0) judged++;
      RULES.forEach(([, rule], r) => {
        const scores = new Float32Array(mixed.length);
        for (let a = 0; a < mixed.length; a++) scores[a] = rule(best[a], second[a], card[a], named[a]);
        const { strict, fair } = rankOf(scores, e, fairSet);
        const t = tallies[r];
        if (strict < 5) t.s5++;
        if (strict < 1) t.s1++;
        if (fair < 5) t.f5++;
        if (fair < 1) t.f1++;
        // The labelled cards alone: the same rule among them only.
        const alone = rankOf(
          labelled.map((a) => scores[a]),
          labelled.indexOf(e),
          new Set(),
        ).strict;
        if (alone < 5) t.a5++;
        if (alone < 1) t.a1++;
        if (dump && r === 0 && formLabel === "as asked" && strict >= 5) {
          const above = [...scores.keys()]
            .filter((a) => scores[a] > scores[e])
            .sort((x, y) => scores[y] - scores[x])
            .slice(0, 5);
          console.log(`\n[${label}] "${query}" -> ${expect} (rank ${strict + 1}, ${scores[e].toFixed(3)})`);
          for (const a of above)
            console.log(
              `   ${scores[a].toFixed(3)} ${fairSet.has(a) ? "FAIR " : "     "}${mixed[a].name}: ${texts[bestSkill[a]]}`,
            );
        }
      });
    }
    const n = queries.length;
    lines.push(`${label} queries (${n}), ${formLabel}; ${judged} with synthetic agents judged to do the job`);
    RULES.forEach(([ruleLabel], r) => {
      const t = tallies[r];
      lines.push(
        `  ${ruleLabel.padEnd(28)} alone ${(t.a5 / n).toFixed(2)} / ${(t.a1 / n).toFixed(2)}   at scale strict ${(t.s5 / n).toFixed(2)} / ${(t.s1 / n).toFixed(2)}, fair ${(t.f5 / n).toFixed(2)} / ${(t.f1 / n).toFixed(2)}`,
      );
    });
  }
}
console.log(
  `\nexact search over ${texts.length} skill vectors + ${mixed.length} card vectors, ${chosen.label} (${load()}); recall@5 / recall@1`,
);
for (const line of lines) console.log(line);
await embedder.close();
