import { indexTerms } from "./text-terms.js";

/** Okapi BM25 constants (the values SQLite FTS5 uses). */
const K1 = 1.2;
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

  /** Where `slot` is among the entries (they are in slot order), -1 when the doc lacks the term. */
  indexOf(slot: number): number {
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.slots[mid];
      if (at === slot) return mid;
      if (at < slot) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

export interface RankedOwner {
  owner: number;
  score: number;
}

function grown<T extends Int32Array | Float32Array | Uint8Array>(array: T, need: number): T {
  if (need <= array.length) return array;
  const next = new (array.constructor as new (n: number) => T)(Math.max(need, array.length * 2));
  next.set(array);
  return next;
}

/**
 * An in-memory BM25 full-text index whose results are owners (agents), each
 * ranked by its best doc (skill). Scoring is term-at-a-time into a dense
 * accumulator, so a query costs the length of its terms' posting lists — not a
 * sort of every match. Same formula as FTS5's bm25(): per-field weights on the
 * term frequency, document length over all fields, idf floored at 1e-6.
 */
export class Bm25Index {
  private readonly terms = new Map<string, Postings>();
  private readonly slotOf = new Map<number, number>();
  private docIdOf = new Int32Array(1024);
  private ownerOf = new Int32Array(1024);
  private lengthOf = new Float32Array(1024);
  private alive = new Uint8Array(1024);
  /** The postings each slot appears in, to count its entries dead on removal. */
  private postingsOf: (Postings[] | undefined)[] = [];
  private slots = 0;
  private maxOwner = 0;
  private liveDocs = 0;
  private deadSlots = 0;
  private totalLength = 0;
  private scores = new Float32Array(1024);
  private best = new Float32Array(1024);

  constructor(private readonly fieldWeights: readonly number[]) {}

  get size(): number {
    return this.liveDocs;
  }

  /** Indexes a doc; `fields` in the order of the weights. */
  add(docId: number, owner: number, fields: readonly string[]): void {
    if (this.slotOf.has(docId)) this.remove(docId);
    const freq = new Map<string, number>();
    let length = 0;
    fields.forEach((text, field) => {
      const weight = this.fieldWeights[field] ?? 1;
      for (const term of indexTerms(text)) {
        freq.set(term, (freq.get(term) ?? 0) + weight);
        length++;
      }
    });
    const slot = this.slots++;
    this.ensureSlots(this.slots);
    this.slotOf.set(docId, slot);
    this.docIdOf[slot] = docId;
    this.ownerOf[slot] = owner;
    if (owner > this.maxOwner) this.maxOwner = owner;
    this.lengthOf[slot] = length;
    this.alive[slot] = 1;
    const postings: Postings[] = [];
    for (const [term, f] of freq) {
      let list = this.terms.get(term);
      if (!list) {
        list = new Postings();
        this.terms.set(term, list);
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
   */
  search(terms: readonly string[], need: number, accept: (owner: number) => boolean): RankedOwner[] {
    if (need <= 0 || this.liveDocs === 0) return [];
    const n = this.liveDocs;
    const avgLength = this.totalLength / n || 1;
    const lists: { list: Postings; idf: number; bound: number }[] = [];
    for (const term of terms) {
      const list = this.terms.get(term);
      if (!list) continue;
      const df = list.size - list.dead;
      if (df <= 0) continue;
      const idf = Math.max(1e-6, Math.log((n - df + 0.5) / (df + 0.5)));
      // A doc of length 0 with the most frequent occurrence: nothing scores more on this term.
      const bound = (idf * list.maxFreq * (K1 + 1)) / (list.maxFreq + K1 * (1 - B));
      lists.push({ list, idf, bound });
    }
    // Rare terms first: they touch few docs, and once the rest cannot lift an untouched
    // doc past the current top `need`, the long lists are only probed for touched docs.
    lists.sort((a, b) => a.list.size - b.list.size);
    const scores = this.scores;
    const alive = this.alive;
    const touched: number[] = [];
    let rest = lists.reduce((sum, l) => sum + l.bound, 0);
    let probing = false;
    for (const { list, idf, bound } of lists) {
      rest -= bound;
      const parts = list.partsAt(avgLength, this.lengthOf);
      if (probing) {
        for (const slot of touched) {
          const at = list.indexOf(slot);
          if (at >= 0) scores[slot] += idf * parts[at];
        }
      } else {
        const { slots, size } = list;
        for (let i = 0; i < size; i++) {
          const slot = slots[i];
          if (alive[slot] === 0) continue;
          if (scores[slot] === 0) touched.push(slot);
          scores[slot] += idf * parts[i];
        }
        probing = rest > 0 && this.worthProbing(touched, lists, list, need, rest, accept);
      }
    }
    return this.topOwners(touched, need, accept);
  }

  /**
   * Whether the remaining lists can be probed for the touched docs alone: no
   * untouched doc can reach the current `need`-th best owner (its score is at
   * most `rest`), and probing is cheaper than reading those lists.
   */
  private worthProbing(
    touched: readonly number[],
    lists: readonly { list: Postings }[],
    done: Postings,
    need: number,
    rest: number,
    accept: (owner: number) => boolean,
  ): boolean {
    let remaining = 0;
    for (let i = lists.length - 1; i >= 0 && lists[i].list !== done; i--) remaining += lists[i].list.size;
    if (touched.length < need || touched.length * Math.log2(remaining + 2) > remaining) return false;
    const top = this.topOwners(touched, need, accept, false);
    return top.length === need && top[need - 1].score > rest;
  }

  /** The best `need` owners of the touched docs, best first (ties: lower owner); `clear` resets the scores. */
  private topOwners(
    touched: readonly number[],
    need: number,
    accept: (owner: number) => boolean,
    clear = true,
  ): RankedOwner[] {
    const { scores, ownerOf } = this;
    if (this.best.length <= this.maxOwner) this.best = grown(this.best, this.maxOwner + 1);
    const best = this.best;
    const owners: number[] = [];
    for (const slot of touched) {
      const owner = ownerOf[slot];
      const score = scores[slot];
      if (best[owner] === 0) owners.push(owner);
      if (score > best[owner]) best[owner] = score;
      if (clear) scores[slot] = 0;
    }
    const top: RankedOwner[] = [];
    for (const owner of owners) {
      const score = best[owner];
      best[owner] = 0;
      const floor = top.length === need ? top[need - 1] : undefined;
      if (floor && (score < floor.score || (score === floor.score && owner > floor.owner))) continue;
      if (!accept(owner)) continue;
      let at = top.length;
      while (
        at > 0 &&
        (top[at - 1].score < score || (top[at - 1].score === score && top[at - 1].owner > owner))
      )
        at--;
      top.splice(at, 0, { owner, score });
      if (top.length > need) top.pop();
    }
    return top;
  }

  private ensureSlots(need: number): void {
    if (need <= this.docIdOf.length) return;
    this.docIdOf = grown(this.docIdOf, need);
    this.ownerOf = grown(this.ownerOf, need);
    this.lengthOf = grown(this.lengthOf, need);
    this.alive = grown(this.alive, need);
    this.scores = grown(this.scores, need);
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
  }
}
