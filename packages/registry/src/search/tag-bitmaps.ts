/**
 * For each tag, a bitmap over owner numbers: intersecting the tags of a query
 * is a word-by-word AND, however many agents each tag has, where walking the
 * rarest tag's set and testing each member against the others cost a hash
 * lookup per member and tag.
 */
export class TagBitmaps {
  private readonly byTag = new Map<string, { bits: Uint32Array; count: number }>();

  add(tag: string, owner: number): void {
    let entry = this.byTag.get(tag);
    if (!entry) {
      entry = { bits: new Uint32Array(wordsFor(owner)), count: 0 };
      this.byTag.set(tag, entry);
    } else if (entry.bits.length < wordsFor(owner)) {
      const grown = new Uint32Array(Math.max(wordsFor(owner), entry.bits.length * 2));
      grown.set(entry.bits);
      entry.bits = grown;
    }
    entry.bits[owner >>> 5] |= 1 << (owner & 31);
    entry.count++;
  }

  remove(tag: string, owner: number): void {
    const entry = this.byTag.get(tag);
    if (!entry) return;
    entry.bits[owner >>> 5] &= ~(1 << (owner & 31));
    if (--entry.count === 0) this.byTag.delete(tag);
  }

  /** The owners having every one of `tags` (at least one tag), as a bitmap, and how many they are. */
  intersect(tags: readonly string[]): { bits: Uint32Array; count: number } {
    const entries = tags.map((tag) => this.byTag.get(tag));
    if (entries.some((e) => e === undefined)) return { bits: new Uint32Array(0), count: 0 };
    const sets = entries as { bits: Uint32Array; count: number }[];
    sets.sort((a, b) => a.bits.length - b.bits.length);
    const bits = sets[0].bits.slice();
    let count = 0;
    for (let w = 0; w < bits.length; w++) {
      let word = bits[w];
      for (let i = 1; i < sets.length && word !== 0; i++) word &= sets[i].bits[w];
      bits[w] = word;
      count += popcount(word);
    }
    return { bits, count };
  }
}

/** Calls `visit` with each owner set in `bits`, lowest first. */
export function forEachOwner(bits: Uint32Array, visit: (owner: number) => void): void {
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w];
    while (word !== 0) {
      const low = word & -word;
      visit(w * 32 + 31 - Math.clz32(low));
      word ^= low;
    }
  }
}

export function hasOwner(bits: Uint32Array, owner: number): boolean {
  return owner >>> 5 < bits.length && (bits[owner >>> 5] & (1 << (owner & 31))) !== 0;
}

function wordsFor(owner: number): number {
  return Math.max(32, (owner >>> 5) + 1);
}

function popcount(word: number): number {
  let x = word - ((word >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
