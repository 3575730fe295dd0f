import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface WordPieceOptions {
  vocab: Map<string, number>;
  lowercase: boolean;
  stripAccents: boolean;
  unknown: string;
  continuation: string;
  maxCharsPerWord?: number;
}

/** BERT's punctuation: ASCII punctuation and Unicode's (P*); other symbols (€, emoji) belong to words. */
const isPunctuation = (ch: string) => /[!-/:-@[-`{-~]|\p{P}/u.test(ch);
/** Dropped by BERT's text cleaning: NUL, U+FFFD and control, format, private-use and surrogate character but tab, LF and CR. */
const isDropped = (ch: string) =>
  ch !== "\t" && ch !== "\n" && ch !== "\r" && /[\ufffd\p{Cc}\p{Cf}\p{Co}\p{Cs}]/u.test(ch);
const isWhitespace = (ch: string) => /\p{White_Space}/u.test(ch);
/** The CJK blocks BERT splits into one token per character (those of Hugging Face tokenizers). */
const isCjk = (cp: number) =>
  (cp >= 0x4e00 && cp <= 0x9fff) ||
  (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x20000 && cp <= 0x2a6df) ||
  (cp >= 0x2a700 && cp <= 0x2b73f) ||
  (cp >= 0x2b740 && cp <= 0x2b81f) ||
  (cp >= 0x2b920 && cp <= 0x2ceaf) ||
  (cp >= 0xf900 && cp <= 0xfaff) ||
  (cp >= 0x2f800 && cp <= 0x2fa1f);

/**
 * BERT's tokenizer as Hugging Face tokenizers runs it (BertNormalizer, BertPreTokenizer,
 * WordPiece): text cleaning, CJK characters apart, optional accent stripping and lowercasing,
 * splitting at whitespace and punctuation, then greedy longest-match WordPiece. Checked against
 * that library in tokenizer-reference.test.ts.
 */
export class WordPieceTokenizer {
  readonly cls: number;
  readonly sep: number;
  readonly pad: number;
  private readonly unknownId: number;

  constructor(private readonly options: WordPieceOptions) {
    const id = (token: string, fallback: number) => options.vocab.get(token) ?? fallback;
    this.unknownId = id(options.unknown, 100);
    this.cls = id("[CLS]", 101);
    this.sep = id("[SEP]", 102);
    this.pad = id("[PAD]", 0);
  }

  /** Reads `tokenizer.json` (a WordPiece model) or `vocab.txt` from a model folder. */
  static fromDirectory(dir: string): WordPieceTokenizer {
    const jsonFile = join(dir, "tokenizer.json");
    if (existsSync(jsonFile)) {
      const spec = JSON.parse(readFileSync(jsonFile, "utf8")) as {
        model?: {
          type?: string;
          vocab?: Record<string, number>;
          unk_token?: string;
          continuing_subword_prefix?: string;
        };
        normalizer?: { lowercase?: boolean; strip_accents?: boolean | null; type?: string } | null;
      };
      if (spec.model?.type !== "WordPiece" || !spec.model.vocab) {
        throw new Error(`${jsonFile} is not a WordPiece tokenizer (BERT-style models only)`);
      }
      const lowercase = spec.normalizer?.lowercase ?? true;
      return new WordPieceTokenizer({
        vocab: new Map(Object.entries(spec.model.vocab)),
        lowercase,
        stripAccents: spec.normalizer?.strip_accents ?? lowercase,
        unknown: spec.model.unk_token ?? "[UNK]",
        continuation: spec.model.continuing_subword_prefix ?? "##",
      });
    }
    const vocabFile = join(dir, "vocab.txt");
    if (!existsSync(vocabFile)) throw new Error(`${dir} has neither tokenizer.json nor vocab.txt`);
    const vocab = new Map<string, number>();
    readFileSync(vocabFile, "utf8")
      .split(/\r?\n/)
      .forEach((token, i) => {
        if (token !== "" && !vocab.has(token)) vocab.set(token, i);
      });
    return new WordPieceTokenizer({
      vocab,
      lowercase: true,
      stripAccents: true,
      unknown: "[UNK]",
      continuation: "##",
    });
  }

  private basicTokens(text: string): string[] {
    // BertNormalizer, in its order; it applies no other Unicode normalization.
    let clean = "";
    for (const ch of text) {
      if (isDropped(ch)) continue;
      if (isWhitespace(ch)) clean += " ";
      else if (isCjk(ch.codePointAt(0)!)) clean += ` ${ch} `;
      else clean += ch;
    }
    if (this.options.stripAccents) clean = clean.normalize("NFD").replace(/\p{Mn}/gu, "");
    // Character by character: a final capital sigma lowers to σ, not to the word-final ς.
    if (this.options.lowercase) clean = clean.replace(/\u03a3/g, "\u03c3").toLowerCase();
    // BertPreTokenizer: words between spaces, each punctuation character a token of its own.
    const tokens: string[] = [];
    let current = "";
    const flush = () => {
      if (current !== "") tokens.push(current);
      current = "";
    };
    for (const ch of clean) {
      if (ch === " ") flush();
      else if (isPunctuation(ch)) {
        flush();
        tokens.push(ch);
      } else current += ch;
    }
    flush();
    return tokens;
  }

  private wordPieces(word: string, out: number[]): void {
    const chars = [...word];
    if (chars.length > (this.options.maxCharsPerWord ?? 100)) {
      out.push(this.unknownId);
      return;
    }
    const pieces: number[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found: number | undefined;
      while (start < end) {
        const piece = (start > 0 ? this.options.continuation : "") + chars.slice(start, end).join("");
        found = this.options.vocab.get(piece);
        if (found !== undefined) break;
        end--;
      }
      if (found === undefined) {
        out.push(this.unknownId);
        return;
      }
      pieces.push(found);
      start = end;
    }
    out.push(...pieces);
  }

  /** `[CLS] pieces… [SEP]`, cut to `maxTokens`. */
  encode(text: string, maxTokens: number): number[] {
    const ids = [this.cls];
    for (const token of this.basicTokens(text)) {
      this.wordPieces(token, ids);
      if (ids.length >= maxTokens - 1) break;
    }
    ids.length = Math.min(ids.length, maxTokens - 1);
    ids.push(this.sep);
    return ids;
  }
}
