import type { Bm25Index, WeightedTerm } from "./bm25-index.js";
import { PART_MARK, queryWords } from "./text-terms.js";

/** What a term found by prefix counts, against a word matched as typed. */
const PREFIX_WEIGHT = 0.8;
/** What a compound part of a query word counts. */
const PART_WEIGHT = 0.3;
/** Most index terms one prefix expands to (those in most docs first). */
const MAX_EXPANSIONS = 16;
const WIDE_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

function minPrefix(word: string): number {
  return WIDE_SCRIPT.test(word) ? 2 : 3;
}

/**
 * The weighted index terms a full-text query searches for (the query syntax of
 * docs/registry.md): each word by its stems; a word ending in `*`, or one whose
 * stems are in no doc, also by the terms it begins (`transl` finds `translate`);
 * a word also counts, less, where it is part of a longer word of a German card, and a
 * long word also by its own parts.
 */
export function searchTerms(text: string, index: Bm25Index): WeightedTerm[] {
  const weights = new Map<string, number>();
  const offer = (term: string, weight: number) => {
    if ((weights.get(term) ?? 0) < weight) weights.set(term, weight);
  };
  for (const word of queryWords(text)) {
    const present = word.stems.filter((stem) => index.has(stem));
    for (const stem of word.stems) {
      offer(stem, 1);
      // The word inside a longer (compound) word of a German card.
      if (stem.length >= 4) offer(PART_MARK + stem, PART_WEIGHT);
    }
    if ((word.prefix || present.length === 0) && word.raw.length >= minPrefix(word.raw)) {
      const expansions = new Set<string>();
      for (const prefix of new Set([word.raw, ...word.stems])) {
        if (prefix.length < minPrefix(prefix)) continue;
        for (const found of index.withPrefix(prefix, MAX_EXPANSIONS)) expansions.add(found);
      }
      for (const found of [...expansions].slice(0, MAX_EXPANSIONS)) offer(found, PREFIX_WEIGHT);
    }
    for (const part of word.parts) {
      offer(part, PART_WEIGHT);
      offer(PART_MARK + part, PART_WEIGHT);
    }
  }
  return [...weights].map(([term, weight]) => ({ term, weight }));
}
