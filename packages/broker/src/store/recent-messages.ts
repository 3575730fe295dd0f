import type { StoredMessage } from "./store.js";

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
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Keeps copies of the payload and header: the originals are views of a socket's read buffer. */
  add(message: StoredMessage): void {
    if (this.maxBytes <= 0) return;
    const kept: StoredMessage = {
      ...message,
      payload: Buffer.from(message.payload),
      header: message.header && Buffer.from(message.header),
    };
    this.byId.set(kept.id, kept);
    this.bytes += sizeOf(kept);
    for (const [id, old] of this.byId) {
      if (this.bytes <= this.maxBytes) break;
      this.byId.delete(id);
      this.bytes -= sizeOf(old);
    }
  }

  get(id: number): StoredMessage | undefined {
    return this.byId.get(id);
  }
}

/** Payload and header bytes plus a rough allowance for the object itself. */
function sizeOf(message: StoredMessage): number {
  return message.payload.length + (message.header?.length ?? 0) + 128;
}
