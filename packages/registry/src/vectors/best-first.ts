/**
 * Positions of a score array, handed out best first (equal scores in position order, as a
 * stable sort would give them). A search scores a few hundred points and usually stops after
 * the first few dozen, so a heap built in linear time and popped as needed does less than
 * sorting them all.
 */
export class BestFirst {
  private heap = new Uint32Array(256);
  private size = 0;
  private scores: Float64Array = new Float64Array(0);

  /** Starts over with positions 0..n-1 of `scores` (kept until the next start, not copied). */
  start(scores: Float64Array, n: number): void {
    if (this.heap.length < n) this.heap = new Uint32Array(Math.max(n, 2 * this.heap.length));
    this.scores = scores;
    this.size = n;
    for (let i = 0; i < n; i++) this.heap[i] = i;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** The best position not handed out yet, or -1 once all have been. */
  next(): number {
    if (this.size === 0) return -1;
    const best = this.heap[0];
    this.size--;
    if (this.size > 0) {
      this.heap[0] = this.heap[this.size];
      this.siftDown(0);
    }
    return best;
  }

  /** Whether position `a` comes before position `b`. */
  private before(a: number, b: number): boolean {
    const sa = this.scores[a];
    const sb = this.scores[b];
    return sa > sb || (sa === sb && a < b);
  }

  private siftDown(from: number): void {
    const heap = this.heap;
    const n = this.size;
    let i = from;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) return;
      let child = left;
      if (left + 1 < n && this.before(heap[left + 1], heap[left])) child = left + 1;
      if (!this.before(heap[child], heap[i])) return;
      const swap = heap[child];
      heap[child] = heap[i];
      heap[i] = swap;
      i = child;
    }
  }
}
