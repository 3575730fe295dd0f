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

const isPunctuation = (ch: string) => /[\p{P}\p{S}]/u.test(ch);
const isCjk = (cp: number) =>
  (cp >= 0x4e00 && cp <= 0x9fff) ||
  (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x20000 && cp <= 0x2a6df) ||
  (cp >= 0xf900 && cp <= 0xfaff) ||
  (cp >= 0x2f800 && cp <= 0x2fa1f);

/**
 * BERT's tokenizer: basic splitting (whitespace, punctuation, CJK), optional
 * lowercasing and accent stripping, then greedy longest-match WordPiece.
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
    let clean = text.normalize("NFC");
    if (this.options.lowercase) clean = clean.toLowerCase();
    if (this.options.stripAccents) clean = clean.normalize("NFD").replace(/\p{Mn}/gu, "");
    const tokens: string[] = [];
    let current = "";
    const flush = () => {
      if (current !== "") tokens.push(current);
      current = "";
    };
    for (const ch of clean) {
      const cp = ch.codePointAt(0)!;
      if (cp === 0 || cp === 0xfffd || (/\p{Cc}/u.test(ch) && !/\s/.test(ch))) continue;
      if (/\s/u.test(ch)) flush();
      else if (isPunctuation(ch) || isCjk(cp)) {
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
