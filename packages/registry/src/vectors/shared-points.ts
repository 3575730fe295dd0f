/**
 * Which docs share each point of the approximate index. Replicas of an agent
 * register the same skills, so identical vectors are common: each distinct
 * vector enters the index once, under a label of its own, and a search hit on
 * that label stands for all its docs (they have the same score).
 */
export class SharedPoints {
  /** doc → the label of its point */
  private readonly labelOf = new Map<number, number>();
  /** label → its docs: a number while the point has one, an array once shared */
  private readonly docsOf = new Map<number, number | number[]>();
  /**
   * label → its doc + 1 while it has exactly one, else 0: what a search's walk over its hits
   * reads, from a dense array rather than the map (most points have one doc).
   */
  private loneDoc = new Float64Array(1024);
  /** vector hash → the label holding that vector; a different vector with the same hash gets a point of its own */
  private readonly labelByHash = new Map<number, number>();
  private readonly hashOf = new Map<number, number>();
  private nextLabel = 0;

  /** Docs on some point. */
  get docCount(): number {
    return this.labelOf.size;
  }

  /** Distinct vectors (live labels). */
  get pointCount(): number {
    return this.docsOf.size;
  }

  has(doc: number): boolean {
    return this.labelOf.has(doc);
  }

  /** The label of the doc's point, if it is on one. */
  pointOf(doc: number): number | undefined {
    return this.labelOf.get(doc);
  }

  docs(): IterableIterator<number> {
    return this.labelOf.keys();
  }

  /** Keeps a label of a loaded index, live or deleted, from being given out again (hnswlib refuses it). */
  reserve(label: number): void {
    this.nextLabel = Math.max(this.nextLabel, label + 1);
  }

  /** Registers a live point of a loaded index. */
  restore(label: number, vector: Float32Array): void {
    const hash = vectorHash(vector);
    this.hashOf.set(label, hash);
    if (!this.labelByHash.has(hash)) this.labelByHash.set(hash, label);
  }

  /** The point holding exactly `vector`, if any; `equal` confirms a hash match against one of its docs or its label. */
  find(vector: Float32Array, equal: (label: number) => boolean): number | undefined {
    const label = this.labelByHash.get(vectorHash(vector));
    return label !== undefined && equal(label) ? label : undefined;
  }

  /** Puts `doc` on an existing point. */
  join(doc: number, label: number): void {
    this.labelOf.set(doc, label);
    const docs = this.docsOf.get(label);
    if (docs === undefined) {
      this.docsOf.set(label, doc);
      this.setLone(label, doc + 1);
    } else if (typeof docs === "number") {
      this.docsOf.set(label, [docs, doc]);
      this.setLone(label, 0);
    } else docs.push(doc);
  }

  /** Puts `doc` on a new point for `vector`; returns the label to add to the index. */
  create(doc: number, vector: Float32Array): number {
    const label = this.nextLabel++;
    const hash = vectorHash(vector);
    this.hashOf.set(label, hash);
    if (!this.labelByHash.has(hash)) this.labelByHash.set(hash, label);
    this.join(doc, label);
    return label;
  }

  /** Takes `doc` off its point; returns the label when that point is left empty (to delete from the index). */
  detach(doc: number): number | undefined {
    const label = this.labelOf.get(doc);
    if (label === undefined) return undefined;
    this.labelOf.delete(doc);
    const docs = this.docsOf.get(label)!;
    if (typeof docs !== "number") {
      docs.splice(docs.indexOf(doc), 1);
      if (docs.length === 1) {
        this.docsOf.set(label, docs[0]);
        this.setLone(label, docs[0] + 1);
      }
      return undefined;
    }
    this.docsOf.delete(label);
    this.setLone(label, 0);
    const hash = this.hashOf.get(label)!;
    this.hashOf.delete(label);
    if (this.labelByHash.get(hash) === label) this.labelByHash.delete(hash);
    return label;
  }

  /** Some doc of the point (its vector is the point's). */
  anyDoc(label: number): number | undefined {
    const docs = this.docsOf.get(label);
    return typeof docs === "number" ? docs : docs?.[0];
  }

  /** The point's docs: one doc as a number, several as an array (do not change it), none as undefined. */
  docsOn(label: number): number | readonly number[] | undefined {
    const lone = this.loneDoc[label];
    return lone > 0 ? lone - 1 : this.docsOf.get(label);
  }

  private setLone(label: number, value: number): void {
    if (label >= this.loneDoc.length) {
      if (value === 0) return;
      const grown = new Float64Array(Math.max(this.loneDoc.length * 2, label + 1));
      grown.set(this.loneDoc);
      this.loneDoc = grown;
    }
    this.loneDoc[label] = value;
  }

  /** Whether some doc of the point passes `test`. */
  someDoc(label: number, test: (doc: number) => boolean): boolean {
    const docs = this.docsOf.get(label);
    if (docs === undefined) return false;
    return typeof docs === "number" ? test(docs) : docs.some(test);
  }
}

/** FNV-1a over the vector's 32-bit words: equal vectors hash alike; a match is still confirmed. */
export function vectorHash(vector: Float32Array): number {
  const words = new Int32Array(vector.buffer, vector.byteOffset, vector.length);
  let hash = 0x811c9dc5;
  for (let i = 0; i < words.length; i++) hash = Math.imul(hash ^ words[i], 0x01000193);
  return hash >>> 0;
}

/** Bit-for-bit equality of two vectors. */
export function sameVector(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Int32Array(a.buffer, a.byteOffset, a.length);
  const y = new Int32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
