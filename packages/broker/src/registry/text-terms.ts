import { stemmer } from "stemmer";

/** Words too common in agent descriptions and questions to tell agents apart. */
const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could do does for from how i in into is it its me my of on or our " +
    "please should so some that the their them then there these this to us was we what when where which " +
    "who will with would you your agent agents find need want help something someone"
  ).split(" "),
);

const TOKEN = /[\p{L}\p{N}]+/gu;
const NON_ASCII = /[^\u0000-\u007f]/;
const MARKS = /\p{M}/gu;

/** Stems already computed: the vocabulary of agent cards is small, stemming is not free. */
const stems = new Map<string, string>();
const MAX_CACHED_STEMS = 200_000;

function term(word: string): string {
  let stem = stems.get(word);
  if (stem === undefined) {
    const plain = NON_ASCII.test(word) ? word.normalize("NFKD").replace(MARKS, "") : word;
    stem = stemmer(plain);
    if (stems.size >= MAX_CACHED_STEMS) stems.clear();
    stems.set(word, stem);
  }
  return stem;
}

/**
 * The index terms of a text, in order and with repeats: lowercased runs of
 * letters and digits, diacritics removed, Porter-stemmed (what SQLite's
 * `porter unicode61 remove_diacritics 2` tokenizer makes of it).
 */
export function indexTerms(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.toLowerCase().matchAll(TOKEN)) terms.push(term(match[0]));
  return terms;
}

/** The distinct terms a free-text query searches for (stopwords dropped, at most 64). */
export function queryTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const match of text.toLowerCase().matchAll(TOKEN)) {
    if (!STOPWORDS.has(match[0])) terms.add(term(match[0]));
  }
  return [...terms].slice(0, 64);
}
