/**
 * The points of the graph farthest from any other, kept apart and searched exactly beside it.
 *
 * A graph search walks from point to neighbour. Where most skills are look-alikes (thousands of
 * templated agents) and a few are unlike anything else (a handful of hand-written cards), the
 * walk stays among the look-alikes, which score almost as well as the true match, and never
 * reaches a lone point even when it is the best one. Scanning the loneliest points exactly on
 * every search finds those. How lone a point is: the similarity of its nearest neighbour,
 * measured when it enters the graph and raised when a nearer point arrives later.
 */

/** The slice of hnswlib-node's exact index used here. */
export interface ExactIndex {
  initIndex(maxElements: number): void;
  addPoint(point: number[], label: number): void;
  removePoint(label: number): void;
  searchKnn(
    query: number[],
    k: number,
    filter?: (label: number) => boolean,
  ): { distances: number[]; neighbors: number[] };
}

/** How many of the points are kept apart: a share of them, within bounds (the scan's cost). */
export function isolatedCapacity(points: number): number {
  return Math.min(ISOLATED_MOST, Math.max(ISOLATED_LEAST, Math.ceil(points * ISOLATED_SHARE)));
}
const ISOLATED_SHARE = 0.02;
const ISOLATED_LEAST = 256;
const ISOLATED_MOST = 4096;

export class IsolatedPoints {
  /** Nearest-neighbour similarity of each point kept, by label. */
  private readonly nearest = new Map<number, number>();
  /** Labels kept, the least lone last (evicted first when a lonelier point arrives). */
  private order: number[] = [];

  constructor(
    private readonly exact: ExactIndex,
    private readonly capacity: () => number,
  ) {
    exact.initIndex(ISOLATED_MOST);
  }

  get size(): number {
    return this.nearest.size;
  }

  /** A point entering the graph, `nearest` the similarity of its nearest neighbour there. */
  consider(label: number, rest: number[], nearest: number): void {
    const room = this.capacity();
    if (this.nearest.size >= room) {
      const leastLone = this.order[this.order.length - 1];
      if (nearest >= this.nearest.get(leastLone)!) return;
      this.remove(leastLone);
    }
    this.nearest.set(label, nearest);
    this.exact.addPoint(rest, label);
    this.insertInOrder(label, nearest);
  }

  /** A point arrived with `similarity` to `label`: a kept point that is no longer lone may make room. */
  neighbourArrived(label: number, similarity: number): void {
    const was = this.nearest.get(label);
    if (was === undefined || similarity <= was) return;
    this.order.splice(this.order.indexOf(label), 1);
    this.nearest.set(label, similarity);
    this.insertInOrder(label, similarity);
  }

  remove(label: number): void {
    if (!this.nearest.delete(label)) return;
    this.order.splice(this.order.indexOf(label), 1);
    this.exact.removePoint(label);
  }

  /** The `k` kept points nearest to `rest` (a query in the graph's space) that pass `accept`. */
  search(
    rest: number[],
    k: number,
    accept?: (label: number) => boolean,
  ): { distances: number[]; neighbors: number[] } {
    const n = Math.min(k, this.nearest.size);
    if (n === 0) return { distances: [], neighbors: [] };
    // The exact index returns fewer than n when fewer pass the filter (the graph's index throws).
    return this.exact.searchKnn(rest, n, accept);
  }

  /** What to save: each kept label with its nearest-neighbour similarity. */
  entries(): [number, number][] {
    return this.order.map((label) => [label, this.nearest.get(label)!]);
  }

  private insertInOrder(label: number, nearest: number): void {
    // Sorted loneliest first; binary search for the place.
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.nearest.get(this.order[mid])! <= nearest) lo = mid + 1;
      else hi = mid;
    }
    this.order.splice(lo, 0, label);
  }
}
