import { stemmer as germanStemmer } from "@orama/stemmers/german";
import { stemmer } from "stemmer";

/** Words too common in agent descriptions and questions to tell agents apart. */
const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could do does for from how i in into is it its me my of on or our " +
    "please should so some that the their them then there these this to us was we what when where which " +
    "who will with would you your agent agents find need want help something someone " +
    // German function words and request phrasing
    "der die das den dem des ein eine einen einem einer und oder ist sind für mit von zu zum zur auf " +
    "im aus bei nach über wer was wie kann können bitte ich mir mich mein meine uns unser " +
    // Chinese and Japanese particles and request phrasing
    "的 了 和 与 把 是 在 我 我们 你 请 帮 帮我 一个 能 可以 谁 哪个 吗 呢 を に は が の て で と も"
  ).split(" "),
);

const TOKEN = /[\p{L}\p{N}]+/gu;
const NON_ASCII = /[^\u0000-\u007f]/;
const MARKS = /\p{M}/gu;
/** Scripts written without spaces between words: split by Intl.Segmenter's dictionaries. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}]/u;
const KANA = /[\p{Script=Hiragana}\p{Script=Katakana}]/u;
const GERMAN_LETTERS = /[äöüß]/;
const GERMAN_WORDS = new Set(
  (
    "der die das den dem des ein eine einen und oder ist sind für mit von zu zum zur auf im aus bei nach über " +
    "nicht auch sich werden wird mein meine meinen meiner wie wo wann welche welcher welches ich mich mir kann darf"
  ).split(" "),
);

/** Intl.Segmenter is not cheap to build: one per locale. */
const segmenters = new Map<string, Intl.Segmenter>();

function segmenter(locale: string): Intl.Segmenter {
  let s = segmenters.get(locale);
  if (!s) {
    s = new Intl.Segmenter(locale, { granularity: "word" });
    segmenters.set(locale, s);
  }
  return s;
}

/** Lowercased words of a text; runs of CJK or Thai characters are split into dictionary words. */
function words(text: string): string[] {
  const out: string[] = [];
  for (const match of text.toLowerCase().matchAll(TOKEN)) {
    const word = match[0];
    if (!UNSPACED.test(word)) {
      out.push(word);
      continue;
    }
    const locale = KANA.test(word) ? "ja" : /\p{Script=Thai}/u.test(word) ? "th" : "zh";
    for (const piece of segmenter(locale).segment(word)) {
      if (piece.isWordLike) out.push(piece.segment);
    }
  }
  return out;
}

/** Which stemmer a text's words get: German for texts that read as German, English otherwise. */
export type TextLanguage = "en" | "de";

/** German when the text has a German letter or function word; everything else is stemmed as English. */
export function languageOf(text: string): TextLanguage {
  const lower = text.toLowerCase();
  if (GERMAN_LETTERS.test(lower)) return "de";
  for (const match of lower.matchAll(TOKEN)) if (GERMAN_WORDS.has(match[0])) return "de";
  return "en";
}

/** Stems already computed: the vocabulary of agent cards is small, stemming is not free. */
const stems = new Map<string, string>();
const MAX_CACHED_STEMS = 200_000;

function fold(word: string): string {
  return NON_ASCII.test(word) ? word.normalize("NFKD").replace(MARKS, "") : word;
}

/** A word's index term: English (Porter) or German (Snowball) stem, diacritics removed; CJK words as they are. */
export function term(word: string, language: TextLanguage = "en"): string {
  const key = language === "de" ? `de:${word}` : word;
  let stem = stems.get(key);
  if (stem === undefined) {
    if (UNSPACED.test(word) || /[\p{Script=Hangul}]/u.test(word)) stem = word;
    else if (language === "de") stem = fold(germanStemmer(word));
    else stem = stemmer(fold(word));
    if (stems.size >= MAX_CACHED_STEMS) stems.clear();
    stems.set(key, stem);
  }
  return stem;
}

/** Compound parts are indexed under this mark, apart from whole words: `~rechnung`. */
export const PART_MARK = "~";

/** Shortest part of a compound word that is indexed on its own. */
const MIN_PART = 4;
/** Words at least this long are split into candidate parts (German compounds). */
const MIN_COMPOUND = 10;

/**
 * Candidate parts of a long German word: every head and tail of at least MIN_PART letters
 * (`rechnungsprüfung` → `rechnung…`, `…prüfung`), stemmed. Without a dictionary the split
 * points are unknown, so all are offered; a part only matters when a query asks for it.
 */
export function compoundParts(word: string): string[] {
  if (word.length < MIN_COMPOUND || UNSPACED.test(word)) return [];
  const parts = new Set<string>();
  for (let cut = MIN_PART; cut <= word.length - MIN_PART; cut++) {
    parts.add(term(word.slice(0, cut), "de"));
    parts.add(term(word.slice(cut), "de"));
  }
  parts.delete(term(word, "de"));
  return [...parts].filter((p) => p.length >= MIN_PART);
}

/** The index terms of a text and its compound parts, which count less (see Bm25Index.add). */
export interface IndexedText {
  terms: string[];
  parts: string[];
}

/**
 * The index terms of a text, in order and with repeats: lowercased words (CJK and Thai split
 * with Intl.Segmenter), diacritics removed, stemmed as English, or as German when `language`
 * says so, in which case long words also yield their compound parts.
 */
export function indexText(text: string, language: TextLanguage = "en"): IndexedText {
  const terms: string[] = [];
  const parts: string[] = [];
  for (const word of words(text)) {
    terms.push(term(word, language));
    if (language === "de") for (const part of compoundParts(word)) parts.push(PART_MARK + part);
  }
  return { terms, parts };
}

/** The index terms of a text (English stemming): see indexText. */
export function indexTerms(text: string): string[] {
  return indexText(text).terms;
}

/** One word of a full-text query, with the terms it may match. */
export interface QueryWord {
  /** The word as typed, lowercased, without a trailing `*`. */
  raw: string;
  /** Its stems (English, and German where that differs). */
  stems: string[];
  /** Asked as a prefix (`transl*`). */
  prefix: boolean;
  /** Parts of a long word, for German compounds. */
  parts: string[];
}

/**
 * The words a free-text query searches for (stopwords dropped, at most 64). A word ending in
 * `*` is a prefix; every word is stemmed both as English and as German, since a short query
 * rarely tells its language.
 */
export function queryWords(text: string): QueryWord[] {
  const out = new Map<string, QueryWord>();
  const starred = new Set<string>();
  for (const match of text.toLowerCase().matchAll(/([\p{L}\p{N}]+)\*/gu)) starred.add(match[1]);
  for (const word of words(text)) {
    if (STOPWORDS.has(word) || out.has(word)) continue;
    const stems = [...new Set([term(word, "en"), term(word, "de")])];
    out.set(word, { raw: fold(word), stems, prefix: starred.has(word), parts: compoundParts(word) });
  }
  return [...out.values()].slice(0, 64);
}

/** The distinct stems a free-text query searches for (English stemming only; see queryWords). */
export function queryTerms(text: string): string[] {
  return [...new Set(queryWords(text).map((w) => w.stems[0]))];
}
