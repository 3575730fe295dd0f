/** A small seeded generator (an LCG): the same seed gives the same blocks, so a failure can be replayed. */
function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Pieces that make header blocks hard to parse: separators in names and values, folded and bare
 * line ends, quotes and backslashes a JSON encoder must escape, a non-ASCII letter.
 */
export const TRICKY_HEADER_PIECES: readonly string[] = [
  "a",
  "B",
  "-",
  " ",
  "\t",
  ":",
  "a:",
  ": ",
  "\r",
  "\n",
  "\r\n",
  '"',
  "\\",
  "é",
  "Z",
  "9",
];

/**
 * Header blocks (as text) made of random pieces, seeded so a failure can be replayed:
 * up to five lines of `minPieces..maxPieces` pieces each, a missing version-line CRLF
 * now and then, and a final empty line four times in five.
 */
export function* randomHeaderBlocks(
  seed: number,
  count: number,
  pieces: readonly string[],
  { minPieces = 0, maxPieces = 11 } = {},
): Generator<string> {
  const next = seededRandom(seed);
  for (let round = 0; round < count; round++) {
    let text = next() < 0.95 ? "NATS/1.0\r\n" : "NATS/1.0";
    const lines = Math.floor(next() * 6);
    for (let l = 0; l < lines; l++) {
      const length = minPieces + Math.floor(next() * (maxPieces - minPieces + 1));
      for (let c = 0; c < length; c++) text += pieces[Math.floor(next() * pieces.length)];
      text += "\r\n";
    }
    if (next() < 0.8) text += "\r\n";
    yield text;
  }
}
