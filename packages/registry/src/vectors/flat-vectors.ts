import type { VectorHit } from "./vector-store.js";

/** Keeps the `limit` best hits seen so far, best first. */
export class TopK {
  readonly hits: VectorHit[] = [];
  constructor(private readonly limit: number) {}

  /** The score a hit must beat to enter. */
  get floor(): number {
    return this.hits.length < this.limit ? Number.NEGATIVE_INFINITY : this.hits[this.hits.length - 1].score;
  }

  offer(id: number, agent: string, score: number): void {
    if (this.limit <= 0 || score <= this.floor) return;
    let i = this.hits.length;
    while (i > 0 && this.hits[i - 1].score < score) i--;
    this.hits.splice(i, 0, { id, agent, score });
    if (this.hits.length > this.limit) this.hits.pop();
  }
}

/**
 * Vectors in one growable flat array, searched exactly. Removal swaps the
 * last vector into the hole, so ids have no fixed position.
 */
export class FlatVectors {
  private data: Float32Array;
  private ids: number[] = [];
  private readonly position = new Map<number, number>();

  constructor(
    readonly dimensions: number,
    capacity = 1024,
  ) {
    this.data = new Float32Array(dimensions * capacity);
  }

  get size(): number {
    return this.ids.length;
  }

  has(id: number): boolean {
    return this.position.has(id);
  }

  set(id: number, vector: Float32Array): void {
    const at = this.position.get(id);
    if (at !== undefined) {
      this.data.set(vector, at * this.dimensions);
      return;
    }
    if ((this.ids.length + 1) * this.dimensions > this.data.length) {
      const grown = new Float32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data.set(vector, this.ids.length * this.dimensions);
    this.position.set(id, this.ids.length);
    this.ids.push(id);
  }

  get(id: number): Float32Array | undefined {
    const at = this.position.get(id);
    return at === undefined
      ? undefined
      : this.data.subarray(at * this.dimensions, (at + 1) * this.dimensions);
  }

  delete(id: number): boolean {
    const at = this.position.get(id);
    if (at === undefined) return false;
    const last = this.ids.length - 1;
    if (at !== last) {
      const moved = this.ids[last];
      this.data.copyWithin(at * this.dimensions, last * this.dimensions, (last + 1) * this.dimensions);
      this.ids[at] = moved;
      this.position.set(moved, at);
    }
    this.ids.pop();
    this.position.delete(id);
    // Vectors leave in bulk once an index takes them: give the memory back (at 1M vectors, 2 GB).
    const capacity = Math.floor(this.data.length / this.dimensions);
    if (capacity > 1024 && this.ids.length * 4 <= capacity) {
      this.data = this.data.slice(0, Math.ceil(capacity / 2) * this.dimensions);
    }
    return true;
  }

  /** Every vector held (views into the array: valid until the next change). */
  *vectors(): Generator<Float32Array> {
    for (let p = 0; p < this.ids.length; p++)
      yield this.data.subarray(p * this.dimensions, (p + 1) * this.dimensions);
  }

  /** Some ids, oldest positions first (used to hand vectors over to an index). */
  firstIds(count: number): number[] {
    return this.ids.slice(0, count);
  }

  /** Exact search: offers every vector that `accept` lets through to `top`. */
  scan(
    query: Float32Array,
    top: TopK,
    agentOf: (id: number) => string,
    accept?: (id: number) => boolean,
  ): void {
    const d = this.dimensions;
    const data = this.data;
    for (let p = 0; p < this.ids.length; p++) {
      const id = this.ids[p];
      if (accept && !accept(id)) continue;
      let sum = 0;
      const base = p * d;
      for (let k = 0; k < d; k++) sum += data[base + k] * query[k];
      if (sum > top.floor) top.offer(id, agentOf(id), sum);
    }
  }
}
