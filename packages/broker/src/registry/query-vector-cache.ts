/** A small LRU of query vectors: repeated semantic queries skip the model. */
export class QueryVectorCache {
  private readonly entries = new Map<string, Float32Array>();

  constructor(private readonly capacity = 10_000) {}

  get(text: string): Float32Array | undefined {
    const vector = this.entries.get(text);
    if (vector !== undefined) {
      this.entries.delete(text);
      this.entries.set(text, vector);
    }
    return vector;
  }

  set(text: string, vector: Float32Array): void {
    if (this.capacity <= 0) return;
    this.entries.delete(text);
    this.entries.set(text, vector);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  clear(): void {
    this.entries.clear();
  }
}
