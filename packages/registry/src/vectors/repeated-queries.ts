import type { VectorHit } from "./vector-store.js";

/**
 * Answers of unfiltered searches, kept for a query vector asked again while the
 * store has not changed. The registry hands back the same vector object for a
 * repeated query text, so the object is the key, and an answer lives no longer
 * than its vector. Any change of what the store holds or how it is indexed
 * starts a new generation, so a kept answer is exactly what searching again
 * would give.
 */
export class RepeatedQueries {
  private generation = 0;
  private readonly answers = new WeakMap<
    Float32Array,
    { generation: number; byLimit: Map<number, VectorHit[]> }
  >();

  /** Something searchable changed: every kept answer is stale. */
  changed(): void {
    this.generation++;
  }

  get(vector: Float32Array, limit: number): VectorHit[] | undefined {
    const kept = this.answers.get(vector);
    if (kept === undefined || kept.generation !== this.generation) return undefined;
    return kept.byLimit.get(limit)?.slice();
  }

  set(vector: Float32Array, limit: number, hits: VectorHit[]): void {
    let kept = this.answers.get(vector);
    if (kept === undefined || kept.generation !== this.generation) {
      kept = { generation: this.generation, byLimit: new Map() };
      this.answers.set(vector, kept);
    }
    kept.byLimit.set(limit, hits.slice());
  }
}
