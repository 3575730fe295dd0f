const MIN_CAPACITY = 1024;
const MAX_HINT = 1024 * 1024;
const NONE = Buffer.alloc(0);

/**
 * A connection's outbound bytes for the current event-loop turn, copied into one growing buffer so
 * the flush is a single socket write without a gather step. A taken buffer belongs to the socket
 * from then on, unless it is handed back with `reuse` once written; otherwise the next turn starts
 * a new one — allocated only when something is appended (idle connections hold no buffer) and
 * sized from what the previous turn needed.
 */
export class OutputBuffer {
  private buf: Buffer = NONE;
  private used = 0;
  private capacityHint = MIN_CAPACITY;
  /** The whole buffer behind the last `take`, until it is reused or the next one is taken. */
  private handedOut: Buffer = NONE;

  get length(): number {
    return this.used;
  }

  append(bytes: Uint8Array): void {
    const n = bytes.length;
    if (this.used + n > this.buf.length) this.grow(n);
    const buf = this.buf;
    let at = this.used;
    // For the short pieces of a MSG line a loop beats the call overhead of TypedArray.set.
    if (n <= 32) {
      for (let i = 0; i < n; i++) buf[at++] = bytes[i];
    } else {
      buf.set(bytes, at);
      at += n;
    }
    this.used = at;
  }

  /**
   * Appends `text` as UTF-8. Its exact size is measured only when it might not fit: a UTF-16 unit
   * takes at most 3 bytes.
   */
  appendUtf8(text: string): void {
    if (this.used + text.length * 3 > this.buf.length) {
      const bytes = Buffer.byteLength(text);
      if (this.used + bytes > this.buf.length) this.grow(bytes);
    }
    this.used += this.buf.write(text, this.used, "utf8");
  }

  appendCrlf(): void {
    if (this.used + 2 > this.buf.length) this.grow(2);
    this.buf[this.used++] = 0x0d;
    this.buf[this.used++] = 0x0a;
  }

  /** Hands out what was written and starts over; undefined when empty. */
  take(): Buffer | undefined {
    const used = this.used;
    if (used === 0) return undefined;
    const out = this.buf.subarray(0, used);
    this.capacityHint = Math.min(MAX_HINT, Math.max(MIN_CAPACITY, used));
    this.handedOut = this.buf;
    this.buf = NONE;
    this.used = 0;
    return out;
  }

  /** Takes back a buffer `take` handed out, once nothing else refers to it. */
  reuse(taken: Buffer): void {
    const whole = this.handedOut;
    if (whole.buffer !== taken.buffer || whole.byteOffset !== taken.byteOffset) return;
    this.handedOut = NONE;
    if (this.buf !== NONE) return;
    // Kept only while it fits what the turns need, so a burst does not pin a big buffer for good.
    if (whole.length >= this.capacityHint && whole.length <= 4 * this.capacityHint) this.buf = whole;
  }

  /** Drops what was written (the connection is closing as a slow consumer). */
  clear(): void {
    this.buf = NONE;
    this.handedOut = NONE;
    this.used = 0;
  }

  private grow(extra: number): void {
    const needed = this.used + extra;
    let capacity = Math.max(this.capacityHint, this.buf.length * 2);
    while (capacity < needed) capacity *= 2;
    const next = Buffer.allocUnsafe(capacity);
    if (this.used > 0) this.buf.copy(next, 0, 0, this.used);
    this.buf = next;
  }
}
