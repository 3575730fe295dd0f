import { indexText, languageOf } from "./text-terms.js";
import { type RankedOwner, TopOwners } from "./top-owners.js";

export type { RankedOwner } from "./top-owners.js";

/** A query term and how much a match on it counts (1 for the words asked; less for prefix expansions and compound parts). */
export interface WeightedTerm {
  term: string;
  weight: number;
}

/** Okapi BM25 constants (the values SQLite FTS5 uses). */
const K1 = 1.2;
/** What a compound part found inside a longer word counts, against the word itself. */
const PART_WEIGHT = 0.3;
const B = 0.75;

/** The docs of one term: parallel arrays of doc slots and weighted term frequencies. */
class Postings {
  slots = new Int32Array(4);
  freqs = new Float32Array(4);
  size = 0;
  /** Entries whose doc was removed; skipped when scoring, dropped at the next compaction. */
  dead = 0;
  /** The largest weighted frequency ever pushed: bounds what the term adds to any doc's score. */
  maxFreq = 0;
  /**
   * Each entry's BM25 term-frequency part, f·(k1+1) / (f + k1·(1 − b + b·len/avg)): the score
   * it adds is idf times this. Valid for the first `partsValid` entries, at average length `partsAvg`.
   */
  parts = new Float32Array(0);
  partsValid = 0;
  partsAvg = Number.NaN;

  push(slot: number, freq: number): void {
    if (this.size === this.slots.length) {
      const slots = new Int32Array(this.size * 2);
      slots.set(this.slots);
      this.slots = slots;
      const freqs = new Float32Array(this.size * 2);
      freqs.set(this.freqs);
      this.freqs = freqs;
    }
    this.slots[this.size] = slot;
    this.freqs[this.size] = freq;
    this.size++;
    if (freq > this.maxFreq) this.maxFreq = freq;
  }

  /** The parts for the current average doc length, computed only where they are missing or stale. */
  partsAt(avgLength: number, lengthOf: Float32Array): Float32Array {
    if (this.partsAvg !== avgLength) {
      this.partsAvg = avgLength;
      this.partsValid = 0;
    }
    if (this.partsValid === this.size) return this.parts;
    if (this.parts.length < this.size) {
      const parts = new Float32Array(this.slots.length);
      parts.set(this.parts.subarray(0, this.partsValid));
      this.parts = parts;
    }
    const { slots, freqs, parts } = this;
    const scale = (K1 * B) / avgLength;
    for (let i = this.partsValid; i < this.size; i++) {
      const f = freqs[i];
      parts[i] = (f * (K1 + 1)) / (f + K1 * (1 - B) + scale * lengthOf[slots[i]]);
    }
    this.partsValid = this.size;
    return parts;
  }

  /** The first entry at or after `from` whose slot is >= `slot` (galloping, then binary search). */
  seek(from: number, slot: number): number {
    const slots = this.slots;
    const size = this.size;
    if (from >= size || slots[from] >= slot) return from;
    let step = 1;
    let lo = from;
    let hi = from + 1;
    while (hi < size && slots[hi] < slot) {
      lo = hi;
      step *= 2;
      hi = from + step;
    }
    if (hi > size) hi = size;
    // slots[lo] < slot; the answer is in (lo, hi].
    while (lo + 1 < hi) {
      const mid = (lo + hi) >>> 1;
      if (slots[mid] < slot) lo = mid;
      else hi = mid;
    }
    return hi;
  }
}

function grown<T extends Int32Array | Float32Array | Uint8Array>(array: T, need: number): T {
  if (need <= array.length) return array;
  const next = new (array.constructor as new (n: number) => T)(Math.max(need, array.length * 2));
  next.set(array);
  return next;
}

/**
 * An in-memory BM25 full-text index whose results are owners (agents), each
 * ranked by its best doc (skill). A query walks its terms' posting lists side
 * by side (see search), so it costs at most their length — not a sort of every
 * match. Same formula as FTS5's bm25(): per-field weights on the term
 * frequency, document length over all fields, idf floored at 1e-6.
 */
export class Bm25Index {
  private readonly terms = new Map<string, Postings>();
  /** Every term, sorted, for prefix lookups: new terms wait in `newTerms` until a lookup merges them in. */
  private vocabulary: string[] = [];
  private newTerms: string[] = [];
  private readonly slotOf = new Map<number, number>();
  private docIdOf = new Int32Array(1024);
  private ownerOf = new Int32Array(1024);
  private lengthOf = new Float32Array(1024);
  private alive = new Uint8Array(1024);
  /** The postings each slot appears in, to count its entries dead on removal. */
  private postingsOf: (Postings[] | undefined)[] = [];
  private slots = 0;
  private liveDocs = 0;
  private deadSlots = 0;
  private totalLength = 0;

  constructor(private readonly fieldWeights: readonly number[]) {}

  get size(): number {
    return this.liveDocs;
  }

  /** Indexes a doc; `fields` in the order of the weights, stemmed in the language the doc reads as. */
  add(docId: number, owner: number, fields: readonly string[]): void {
    if (this.slotOf.has(docId)) this.remove(docId);
    const freq = new Map<string, number>();
    let length = 0;
    const language = languageOf(fields.join(" "));
    fields.forEach((text, field) => {
      const weight = this.fieldWeights[field] ?? 1;
      const { terms, parts } = indexText(text, language);
      for (const term of terms) {
        freq.set(term, (freq.get(term) ?? 0) + weight);
        length++;
      }
      for (const part of parts) freq.set(part, (freq.get(part) ?? 0) + weight * PART_WEIGHT);
    });
    const slot = this.slots++;
    this.ensureSlots(this.slots);
    this.slotOf.set(docId, slot);
    this.docIdOf[slot] = docId;
    this.ownerOf[slot] = owner;
    this.lengthOf[slot] = length;
    this.alive[slot] = 1;
    const postings: Postings[] = [];
    for (const [term, f] of freq) {
      let list = this.terms.get(term);
      if (!list) {
        list = new Postings();
        this.terms.set(term, list);
        this.newTerms.push(term);
      }
      list.push(slot, f);
      postings.push(list);
    }
    this.postingsOf[slot] = postings;
    this.liveDocs++;
    this.totalLength += length;
  }

  remove(docId: number): void {
    const slot = this.slotOf.get(docId);
    if (slot === undefined) return;
    this.slotOf.delete(docId);
    this.alive[slot] = 0;
    for (const list of this.postingsOf[slot] ?? []) list.dead++;
    this.postingsOf[slot] = undefined;
    this.liveDocs--;
    this.totalLength -= this.lengthOf[slot];
    this.deadSlots++;
    if (this.deadSlots > 4096 && this.deadSlots > this.liveDocs) this.compact();
  }

  /**
   * The `need` best owners for the terms among those `accept` lets through,
   * best first (ties: the lower owner number first).
   *
   * Document at a time over the terms' lists, which are in slot order, with
   * MaxScore pruning: lists are ordered by the most they can add to a doc, and
   * once the smallest of them together cannot lift a doc to the current
   * `need`-th best owner, docs are only taken from the others and those lists
   * are merely probed for them. Each doc's score stays in a local variable, so
   * a query reads its lists in order and touches no per-doc score array.
   */
  search(terms: readonly WeightedTerm[], need: number, accept: (owner: number) => boolean): RankedOwner[] {
    if (need <= 0 || this.liveDocs === 0) return [];
    const n = this.liveDocs;
    const avgLength = this.totalLength / n || 1;
    const lists: { list: Postings; idf: number; bound: number; parts: Float32Array }[] = [];
    for (const { term, weight } of terms) {
      const list = this.terms.get(term);
      if (!list || weight <= 0 || lists.some((l) => l.list === list)) continue;
      const df = list.size - list.dead;
      if (df <= 0) continue;
      const idf = weight * Math.max(1e-6, Math.log((n - df + 0.5) / (df + 0.5)));
      // A doc of length 0 with the most frequent occurrence: nothing scores more on this term.
      const bound = (idf * list.maxFreq * (K1 + 1)) / (list.maxFreq + K1 * (1 - B));
      lists.push({ list, idf, bound, parts: list.partsAt(avgLength, this.lengthOf) });
    }
    lists.sort((a, b) => a.bound - b.bound);
    const count = lists.length;
    // upTo[i]: the most lists 0..i together add to one doc.
    const upTo = new Float64Array(count);
    lists.forEach((l, i) => {
      upTo[i] = (i > 0 ? upTo[i - 1] : 0) + l.bound;
    });
    const cursor = new Int32Array(count);
    // The lists' arrays side by side, so the loop below reads no object fields.
    const slotsOf = lists.map((l) => l.list.slots);
    const partsOf = lists.map((l) => l.parts);
    const sizeOf = Int32Array.from(lists, (l) => l.list.size);
    const idfOf = Float64Array.from(lists, (l) => l.idf);
    const top = new TopOwners(need, accept);
    const { alive, ownerOf } = this;
    // Lists below `essential` are only probed: together they cannot lift a doc to the floor.
    let essential = 0;
    let floor = 0;
    for (;;) {
      let slot = 0x7fffffff;
      for (let i = essential; i < count; i++) {
        const at = cursor[i];
        if (at < sizeOf[i] && slotsOf[i][at] < slot) slot = slotsOf[i][at];
      }
      if (slot === 0x7fffffff) break;
      let score = 0;
      for (let i = essential; i < count; i++) {
        const at = cursor[i];
        if (at < sizeOf[i] && slotsOf[i][at] === slot) {
          score += idfOf[i] * partsOf[i][at];
          cursor[i] = at + 1;
        }
      }
      if (alive[slot] === 0) continue;
      let reachable = true;
      for (let i = essential - 1; i >= 0; i--) {
        // Equal to the floor may still win on owner number, so only a strictly lower total is cut.
        if (score + upTo[i] < floor) {
          reachable = false;
          break;
        }
        const at = lists[i].list.seek(cursor[i], slot);
        cursor[i] = at;
        if (at < sizeOf[i] && slotsOf[i][at] === slot) score += idfOf[i] * partsOf[i][at];
      }
      if (!reachable || score < floor) continue;
      top.offer(ownerOf[slot], score);
      floor = top.floor;
      while (essential < count && upTo[essential] < floor) essential++;
    }
    return top.ranked;
  }

  private ensureSlots(need: number): void {
    if (need <= this.docIdOf.length) return;
    this.docIdOf = grown(this.docIdOf, need);
    this.ownerOf = grown(this.ownerOf, need);
    this.lengthOf = grown(this.lengthOf, need);
    this.alive = grown(this.alive, need);
  }

  /** Renumbers the live docs densely and drops dead posting entries. */
  private compact(): void {
    const newSlot = new Int32Array(this.slots).fill(-1);
    let next = 0;
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.alive[slot] === 0) continue;
      newSlot[slot] = next;
      this.docIdOf[next] = this.docIdOf[slot];
      this.ownerOf[next] = this.ownerOf[slot];
      this.lengthOf[next] = this.lengthOf[slot];
      this.alive[next] = 1;
      this.postingsOf[next] = this.postingsOf[slot];
      this.slotOf.set(this.docIdOf[next], next);
      next++;
    }
    this.alive.fill(0, next);
    this.postingsOf.length = next;
    this.slots = next;
    this.deadSlots = 0;
    for (const [term, list] of this.terms) {
      let kept = 0;
      for (let i = 0; i < list.size; i++) {
        const slot = newSlot[list.slots[i]];
        if (slot < 0) continue;
        list.slots[kept] = slot;
        list.freqs[kept] = list.freqs[i];
        kept++;
      }
      list.size = kept;
      list.dead = 0;
      list.partsValid = 0;
      if (kept === 0) this.terms.delete(term);
    }
    this.vocabulary = [...this.terms.keys()].sort();
    this.newTerms = [];
  }

  /** Merges the terms added since the last lookup into the sorted vocabulary. */
  private settleVocabulary(): void {
    if (this.newTerms.length === 0) return;
    const fresh = this.newTerms.sort();
    this.newTerms = [];
    const old = this.vocabulary;
    const merged: string[] = new Array(old.length + fresh.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length || j < fresh.length) {
      merged[k++] = j >= fresh.length || (i < old.length && old[i] < fresh[j]) ? old[i++] : fresh[j++];
    }
    this.vocabulary = merged;
  }

  /** Where `term` is, or would go, in the sorted vocabulary. */
  private vocabularyPosition(term: string): number {
    const vocabulary = this.vocabulary;
    let lo = 0;
    let hi = vocabulary.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (vocabulary[mid] < term) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether any live doc has the term. */
  has(term: string): boolean {
    const list = this.terms.get(term);
    return list !== undefined && list.size > list.dead;
  }

  /** Up to `max` terms of live docs that start with `prefix` (and are longer), those in most docs first. */
  withPrefix(prefix: string, max: number): string[] {
    this.settleVocabulary();
    const found: { term: string; df: number }[] = [];
    for (let i = this.vocabularyPosition(prefix); i < this.vocabulary.length; i++) {
      const term = this.vocabulary[i];
      if (!term.startsWith(prefix)) break;
      const list = this.terms.get(term);
      const df = list ? list.size - list.dead : 0;
      if (term !== prefix && df > 0) found.push({ term, df });
    }
    found.sort((a, b) => b.df - a.df || (a.term < b.term ? -1 : 1));
    return found.slice(0, max).map((f) => f.term);
  }

  /** How many distinct owners `accept` lets through have a live doc with any of the terms. */
  countOwners(terms: readonly WeightedTerm[], accept: (owner: number) => boolean): number {
    const seen = new Set<number>();
    let count = 0;
    for (const { term } of terms) {
      const list = this.terms.get(term);
      if (!list) continue;
      for (let i = 0; i < list.size; i++) {
        const slot = list.slots[i];
        if (this.alive[slot] === 0) continue;
        const owner = this.ownerOf[slot];
        if (seen.has(owner)) continue;
        seen.add(owner);
        if (accept(owner)) count++;
      }
    }
    return count;
  }
}
