/**
 * The name of `names` a misspelt `word` most likely meant: one edit away for a short word,
 * two for a longer one, three beyond eight letters (case ignored); undefined when none is
 * that close, so a "did you mean" is offered only where it helps.
 */
export function closestName(word: string, names: Iterable<string>): string | undefined {
  const typed = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = (typed.length <= 4 ? 1 : typed.length <= 8 ? 2 : 3) + 1;
  for (const name of names) {
    const distance = editDistance(typed, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
      }
    }
  }
  return rows[a.length][b.length];
}

/**
 * The suffix every "unknown name" error of mq9 ends with: `; did you mean 'x'?` for a guess,
 * nothing without one.
 */
export function suggestion(guess: string | undefined): string {
  return guess === undefined ? "" : `; did you mean '${guess}'?`;
}

/** `suggestion` for the name of `names` closest to `word` (see closestName). */
export function didYouMean(word: string, names: Iterable<string>): string {
  return suggestion(closestName(word, names));
}
