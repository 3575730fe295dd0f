import { TwoGenerationMap } from "@mq9/protocol";

/** One vocabulary entry of a sentencepiece unigram model: the piece and its log-probability. */
export type SentencePiece = [piece: string, logProbability: number];

/** The word-boundary mark sentencepiece puts before every word. */
const WORD_START = "\u2581";

/**
 * sentencepiece's default normalization (nmt_nfkc) beyond NFKC: these control characters are
 * dropped, and these invisible separators (and a literal word mark) become spaces.
 */
const DROPPED = /[\u0001-\u0008\u000b\u000e-\u001f\u007f\u008f\u009f]/g;
const SPACES = /[\t\n\f\r\u061c\u1680\u200b\u200c\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd]/g;
/** The one character nmt_nfkc keeps that NFKC would change (to "~"). */
const FULLWIDTH_TILDE = "\uff5e";

/** Text as sentencepiece's nmt_nfkc rule normalizes it, before whitespace is collapsed. */
function nmtNfkc(text: string): string {
  const nfkc = text.includes(FULLWIDTH_TILDE)
    ? text
        .split(FULLWIDTH_TILDE)
        .map((part) => part.normalize("NFKC"))
        .join(FULLWIDTH_TILDE)
    : text.normalize("NFKC");
  return nfkc.replace(DROPPED, "").replace(SPACES, " ");
}

/** What an unknown character costs in the segmentation: worse than any real piece. */
const UNKNOWN_PENALTY = -100;

/**
 * Splits text into the pieces of a sentencepiece unigram vocabulary (the most
 * probable segmentation, found by dynamic programming over the text's UTF-16
 * units). A character no piece covers becomes the unknown id, which the
 * caller can skip. Text is normalized as sentencepiece's nmt_nfkc rule does; checked against
 * sentencepiece itself in tokenizer-reference.test.ts.
 */
export class SentencePieceTokenizer {
  readonly unknownId = 0;
  private readonly ids = new Map<string, number>();
  /** Every proper prefix of a piece: extending a candidate past one that is not here cannot match. */
  private readonly prefixes = new Set<string>();
  private readonly longestPiece: number;
  /**
   * No piece has a word-boundary mark past its first character, so no piece spans two words and
   * the best segmentation of a text is that of each of its words: those are kept once computed.
   */
  private readonly piecesStayInWords: boolean;
  private readonly words = new TwoGenerationMap<string, number[]>(32_768);

  /** `reserved` leading entries (control symbols such as `<s>`) never match text. */
  constructor(
    readonly vocabulary: SentencePiece[],
    reserved = 6,
  ) {
    let longest = 1;
    let stayInWords = true;
    for (let id = reserved; id < vocabulary.length; id++) {
      const piece = vocabulary[id][0];
      if (piece.indexOf(WORD_START, 1) !== -1) stayInWords = false;
      if (!this.ids.has(piece)) this.ids.set(piece, id);
      for (let end = 1; end < piece.length; end++) this.prefixes.add(piece.slice(0, end));
      longest = Math.max(longest, piece.length);
    }
    this.longestPiece = longest;
    this.piecesStayInWords = stayInWords;
  }

  /** Piece ids of `text`, unknown characters as `unknownId` (one per run of them). */
  encode(text: string): number[] {
    const normalized = nmtNfkc(text).trim();
    if (normalized === "") return [];
    if (!this.piecesStayInWords)
      return this.segment(`${WORD_START}${normalized.replace(/\s+/g, WORD_START)}`);
    const ids: number[] = [];
    for (const word of normalized.split(/\s+/)) {
      let pieces = this.words.get(word);
      if (pieces === undefined) {
        pieces = this.segment(`${WORD_START}${word}`);
        this.words.set(word, pieces);
      }
      for (const id of pieces) {
        if (id === this.unknownId && ids.at(-1) === this.unknownId) continue;
        ids.push(id);
      }
    }
    return ids;
  }

  /** The most probable segmentation of `chars` (word starts already marked). */
  private segment(chars: string): number[] {
    // UTF-16 units: a character outside the BMP is two unknown halves, merged into one unknown id below.
    const n = chars.length;
    const best = new Float64Array(n + 1).fill(Number.NEGATIVE_INFINITY);
    const from = new Int32Array(n + 1);
    const piece = new Int32Array(n + 1);
    best[0] = 0;
    // Forward relaxation: best[start] is final once every shorter prefix has been extended.
    for (let start = 0; start < n; start++) {
      if (best[start] === Number.NEGATIVE_INFINITY) continue;
      for (let end = start + 1; end <= Math.min(n, start + this.longestPiece); end++) {
        const candidate = chars.slice(start, end);
        const id = this.ids.get(candidate);
        const score =
          id !== undefined
            ? best[start] + this.vocabulary[id][1]
            : end - start === 1
              ? best[start] + UNKNOWN_PENALTY
              : Number.NEGATIVE_INFINITY;
        if (score > best[end]) {
          best[end] = score;
          from[end] = start;
          piece[end] = id ?? this.unknownId;
        }
        if (!this.prefixes.has(candidate)) break;
      }
    }
    const reversed: number[] = [];
    for (let end = n; end > 0; end = from[end]) {
      const id = piece[end];
      if (id === this.unknownId && reversed.at(-1) === this.unknownId) continue;
      reversed.push(id);
    }
    return reversed.reverse();
  }
}
