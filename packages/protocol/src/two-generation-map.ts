/**
 * A map that keeps about `capacity` keys, forgetting the least recently used first, in
 * two generations: when the newer one holds half the capacity, the older one is dropped
 * whole, and a key read from the older one moves to the newer. A Map used as an LRU
 * (delete, re-insert, evict its first key) walks over the deleted entries at its front
 * on every eviction; this never does.
 */
export class TwoGenerationMap<K, V> {
  private current = new Map<K, V>();
  private previous = new Map<K, V>();
  private readonly half: number;

  constructor(capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  get(key: K): V | undefined {
    const value = this.current.get(key);
    if (value !== undefined) return value;
    const older = this.previous.get(key);
    if (older !== undefined) {
      this.previous.delete(key);
      this.set(key, older);
    }
    return older;
  }

  has(key: K): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  set(key: K, value: V): void {
    this.current.set(key, value);
    if (this.current.size >= this.half) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  delete(key: K): void {
    this.current.delete(key);
    this.previous.delete(key);
  }

  clear(): void {
    this.current.clear();
    this.previous.clear();
  }
}
