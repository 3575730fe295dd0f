/** Bytes a slab holds; records of more than a quarter of it get memory of their own. */
const DEFAULT_SLAB_BYTES = 1 << 20;

/**
 * Hands out consecutive pieces of large buffers for the message log's records. Allocating a
 * buffer per commit group cost SEND more than encoding the group; a piece of a slab costs one
 * view. A slab lives as long as any piece of it is referenced (a group's rows hold views of its
 * record while they are stored; nothing keeps them after), and at most one is being filled.
 */
export class RecordSlab {
  private slab: Buffer = Buffer.alloc(0);
  private used = 0;

  constructor(private readonly slabBytes = DEFAULT_SLAB_BYTES) {}

  /** `size` bytes nobody else holds, not initialised. */
  readonly take = (size: number): Buffer => {
    if (size > this.slabBytes >> 2) return Buffer.allocUnsafeSlow(size);
    if (this.used + size > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(this.slabBytes);
      this.used = 0;
    }
    const piece = this.slab.subarray(this.used, this.used + size);
    // Pieces start on 8-byte boundaries, as allocations do.
    this.used += (size + 7) & ~7;
    return piece;
  };
}
