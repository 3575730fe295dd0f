import type { StoredMessage } from "./store.js";

/** Payload copies are packed into slabs of this size: one allocation per ~250 messages of 1 KiB. */
const SLAB_BYTES = 256 * 1024;

/**
 * The most recently stored messages by id, up to a byte budget, oldest
 * dropped first. A claim right after a SEND (a consumer keeping up) finds its
 * messages here instead of reading each row and copying its payload out of
 * SQLite. Ids are never reused and stored messages never change, so an entry
 * of a message deleted since is harmless: lookups start from ids the database
 * still has.
 */
export class RecentMessages {
  private readonly byId = new Map<number, StoredMessage>();
  // Insertion order kept apart from the map: walking a Map from its start after many deletes
  // steps over every deleted slot again, which made each add cost more the longer it ran.
  private order: number[] = [];
  private oldest = 0;
  private bytes = 0;
  private slab = Buffer.alloc(0);
  private slabUsed = 0;

  constructor(private readonly maxBytes: number) {}

  /** Keeps copies of the payload and header: the originals are views of a socket's read buffer. */
  add(message: StoredMessage): void {
    if (this.maxBytes <= 0) return;
    this.keep({
      ...message,
      payload: this.copy(message.payload),
      header: message.header && this.copy(message.header),
    });
  }

  /** Keeps the message as it is: its payload and header must be bytes nobody overwrites. */
  keep(kept: StoredMessage): void {
    if (this.maxBytes <= 0) return;
    this.byId.set(kept.id, kept);
    this.order.push(kept.id);
    this.bytes += sizeOf(kept);
    while (this.bytes > this.maxBytes && this.oldest < this.order.length) {
      const id = this.order[this.oldest++];
      const old = this.byId.get(id);
      if (old === undefined) continue;
      this.byId.delete(id);
      this.bytes -= sizeOf(old);
    }
    if (this.oldest > 4096 && this.oldest * 2 > this.order.length) {
      this.order = this.order.slice(this.oldest);
      this.oldest = 0;
    }
  }

  get(id: number): StoredMessage | undefined {
    return this.byId.get(id);
  }

  /**
   * Copies bytes into the current slab (a view of it is kept). Messages leave in the order they
   * came, so a slab is garbage once its last message has been dropped.
   */
  private copy(bytes: Uint8Array): Uint8Array {
    const n = bytes.length;
    if (n > SLAB_BYTES / 4) return Buffer.from(bytes);
    if (this.slabUsed + n > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.slabUsed = 0;
    }
    const at = this.slabUsed;
    this.slab.set(bytes, at);
    this.slabUsed = at + n;
    return this.slab.subarray(at, at + n);
  }
}

/** Payload and header bytes plus a rough allowance for the object itself. */
function sizeOf(message: StoredMessage): number {
  return message.payload.length + (message.header?.length ?? 0) + 128;
}
