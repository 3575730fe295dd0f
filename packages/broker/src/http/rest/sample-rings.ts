/**
 * Fixed-size rings of samples that share one clock: the ring keeps the time of each slot, and each
 * series keeps one number per field and slot. Memory is allocated once, at the ring's capacity, so
 * a series costs `capacity × fields × 4` bytes however long the broker runs.
 */
export class SampleClock {
  readonly times: Float64Array;
  private next = 0;
  private filled = 0;

  constructor(readonly capacity: number) {
    this.times = new Float64Array(capacity);
  }

  /** Takes the next slot (the oldest one once the ring is full) for a sample taken at `at`. */
  push(at: number): number {
    const slot = this.next;
    this.times[slot] = at;
    this.next = (slot + 1) % this.capacity;
    this.filled = Math.min(this.filled + 1, this.capacity);
    return slot;
  }

  /** The slots of the samples taken at or after `sinceMs`, oldest first. */
  slotsSince(sinceMs: number): number[] {
    const slots: number[] = [];
    const first = (this.next - this.filled + this.capacity) % this.capacity;
    for (let i = 0; i < this.filled; i++) {
      const slot = (first + i) % this.capacity;
      if (this.times[slot] >= sinceMs) slots.push(slot);
    }
    return slots;
  }
}

/** One series of a SampleClock: per field, a value per slot (NaN where it was not sampled). */
export class SampleSeries {
  private readonly values: Float32Array[];

  constructor(capacity: number, fields: number) {
    this.values = Array.from({ length: fields }, () => new Float32Array(capacity).fill(Number.NaN));
  }

  write(slot: number, values: readonly number[]): void {
    for (let field = 0; field < this.values.length; field++) {
      this.values[field][slot] = values[field] ?? Number.NaN;
    }
  }

  /** The field's values at these slots; null where the series was not sampled. */
  read(field: number, slots: readonly number[]): (number | null)[] {
    const column = this.values[field];
    // Seven significant digits: what a 32-bit float holds (0.2, not 0.20000000298).
    return slots.map((slot) => (Number.isNaN(column[slot]) ? null : Number(column[slot].toPrecision(7))));
  }
}
