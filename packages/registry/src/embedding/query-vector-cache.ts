import { TwoGenerationMap } from "@mq9/protocol";

/** Query vectors by text, the least recently used forgotten first: repeated semantic queries skip the model. */
export class QueryVectorCache {
  private readonly entries?: TwoGenerationMap<string, Float32Array>;

  constructor(capacity = 10_000) {
    if (capacity > 0) this.entries = new TwoGenerationMap(capacity);
  }

  get(text: string): Float32Array | undefined {
    return this.entries?.get(text);
  }

  set(text: string, vector: Float32Array): void {
    this.entries?.set(text, vector);
  }

  clear(): void {
    this.entries?.clear();
  }
}
