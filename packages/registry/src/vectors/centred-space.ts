/**
 * The geometry the approximate index is built in. Sentence embeddings share a
 * large common component: every skill vector lies in a narrow cone around the
 * mean direction, and a query about a small, distinct group of skills (a few
 * real cards among many look-alike ones) is then hard for the graph to reach.
 * The index holds each vector with that component taken out and the rest
 * scaled to unit length, which spreads the cone out; each point keeps the two
 * numbers that turn a similarity in that space back into the exact inner
 * product of the original vectors, so scores and ranking are not approximated
 * beyond which points the graph search visits.
 */
export class CentredSpace {
  private constructor(
    /** Unit mean direction of the vectors it was learned from; all zeros when they have none. */
    readonly mean: Float32Array,
  ) {}

  /** The original space (the index holds the vectors as they are), for comparison. */
  static identity(dimensions: number): CentredSpace {
    return new CentredSpace(new Float32Array(dimensions));
  }

  /** The space of `vectors` (all of one length). */
  static learn(vectors: Iterable<Float32Array>, dimensions: number): CentredSpace {
    const sum = new Float64Array(dimensions);
    for (const v of vectors) for (let k = 0; k < dimensions; k++) sum[k] += v[k];
    let norm = 0;
    for (let k = 0; k < dimensions; k++) norm += sum[k] * sum[k];
    norm = Math.sqrt(norm);
    const mean = new Float32Array(dimensions);
    // Vectors with no common direction (they cancel out): the space is the original one.
    if (norm > 1e-9) for (let k = 0; k < dimensions; k++) mean[k] = sum[k] / norm;
    return new CentredSpace(mean);
  }

  /** A space saved with `bytes()`. */
  static fromBytes(bytes: Uint8Array, dimensions: number): CentredSpace | undefined {
    if (bytes.byteLength !== dimensions * 4) return undefined;
    return new CentredSpace(new Float32Array(Uint8Array.from(bytes).buffer));
  }

  bytes(): Buffer {
    return Buffer.from(this.mean.buffer, this.mean.byteOffset, this.mean.byteLength);
  }

  /**
   * `v` in this space: its component along the mean, the length of the rest, and
   * the rest at unit length (all zeros when nothing is left), as hnswlib takes it.
   */
  project(v: Float32Array): Projected {
    const mean = this.mean;
    const d = mean.length;
    let along = 0;
    for (let k = 0; k < d; k++) along += v[k] * mean[k];
    const rest = new Array<number>(d);
    let norm = 0;
    for (let k = 0; k < d; k++) {
      const x = v[k] - along * mean[k];
      rest[k] = x;
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    if (norm > 0) for (let k = 0; k < d; k++) rest[k] /= norm;
    else rest.fill(0);
    return { along, norm, rest };
  }
}

export interface Projected {
  along: number;
  norm: number;
  rest: number[];
}

/**
 * The original inner product of two vectors from their projections and the
 * inner product of their unit rests: q·x = (q·m)(x·m) + |q⊥||x⊥| (q̂⊥·x̂⊥).
 */
export function innerProduct(
  queryAlong: number,
  queryNorm: number,
  along: number,
  norm: number,
  restSimilarity: number,
): number {
  return queryAlong * along + queryNorm * norm * restSimilarity;
}

/** Each index point's component along the mean and the length of its rest, by label. */
export class PointNorms {
  private values = new Float32Array(2 * 1024);

  set(label: number, along: number, norm: number): void {
    if (2 * label + 1 >= this.values.length) {
      const grown = new Float32Array(Math.max(this.values.length * 2, 2 * label + 2));
      grown.set(this.values);
      this.values = grown;
    }
    this.values[2 * label] = along;
    this.values[2 * label + 1] = norm;
  }

  /** The exact inner product with the point `label` of a query projected as `query`. */
  score(query: Projected, label: number, restSimilarity: number): number {
    return innerProduct(
      query.along,
      query.norm,
      this.values[2 * label],
      this.values[2 * label + 1],
      restSimilarity,
    );
  }
}
