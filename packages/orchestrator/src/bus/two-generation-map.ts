/**
 * A map that keeps about `capacity` keys, forgetting the least recently set first, in
 * two generations: when the newer one holds half the capacity, the older one is dropped
 * whole. A Map used as an LRU (delete, re-insert, evict its first key) walks over the
 * deleted entries at its front on every eviction; this never does.
 */
export class TwoGenerationMap<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  private readonly half: number;

  constructor(capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  get(key: string): V | undefined {
    const value = this.current.get(key);
    return value !== undefined ? value : this.previous.get(key);
  }

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  set(key: string, value: V): void {
    this.current.set(key, value);
    if (this.current.size >= this.half) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  delete(key: string): void {
    this.current.delete(key);
    this.previous.delete(key);
  }
}
