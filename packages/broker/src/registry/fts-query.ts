/** Words too common in agent descriptions and questions to tell agents apart. */
const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could do does for from how i in into is it its me my of on or our " +
    "please should so some that the their them then there these this to us was we what when where which " +
    "who will with would you your agent agents find need want help something someone"
  ).split(" "),
);

const WORD = /[\p{L}\p{N}]+/gu;

/** The searchable words of a text: lowercased letters/digits runs, stopwords dropped, deduplicated. */
export function searchWords(text: string): string[] {
  const words = new Set<string>();
  for (const match of text.toLowerCase().matchAll(WORD)) {
    if (!STOPWORDS.has(match[0])) words.add(match[0]);
  }
  return [...words];
}

/**
 * An FTS5 MATCH expression for free text: any of its words (BM25 ranks agents
 * matching more and rarer words higher). Each word is quoted, so FTS5 syntax
 * in the caller's text is never interpreted. `undefined` when nothing is left.
 */
export function ftsQuery(text: string): string | undefined {
  const words = searchWords(text).slice(0, 64);
  if (words.length === 0) return undefined;
  return words.map((w) => `"${w}"`).join(" OR ");
}
