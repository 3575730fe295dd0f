/**
 * Encodings that recur across messages, kept so a publish usually allocates nothing for its MSG
 * line: subjects repeat (a cache of "MSG <subject> " per subject), and so do sizes of reply-less
 * messages. Both caches are bounded; they are cleared when full, which is cheap and rare.
 */
const MAX_CACHED = 4096;
const plainHeads = new Map<string, Buffer>();
const headerHeads = new Map<string, Buffer>();
// Pre-sized so V8 keeps fast elements instead of a dictionary for a sparse array.
const sizeTails: (Buffer | undefined)[] = Array.from({ length: MAX_CACHED }, () => undefined);

function cachedHead(cache: Map<string, Buffer>, op: string, subject: string): Buffer {
  let head = cache.get(subject);
  if (head === undefined) {
    if (cache.size >= MAX_CACHED) cache.clear();
    head = Buffer.from(`${op} ${subject} `);
    cache.set(subject, head);
  }
  return head;
}

/** A message body: bytes; or text, or pieces of text and bytes, written out as UTF-8 one after the other. */
export type OutboundBody = Buffer | string | readonly (string | Uint8Array)[];

function bodyLength(body: OutboundBody): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.length;
  let n = 0;
  for (const piece of body) n += typeof piece === "string" ? Buffer.byteLength(piece) : piece.length;
  return n;
}

/**
 * One routed message. The MSG/HMSG control line differs per subscriber only in the sid, so the parts
 * around it are encoded once per publish (or taken from the caches above) and shared by every delivery.
 */
export class OutboundMessage {
  private msgTail: Buffer | undefined;
  private hmsgTail: Buffer | undefined;
  /** Size of the body in bytes (UTF-8 bytes when it is text). */
  readonly bodyLength: number;

  constructor(
    readonly subject: string,
    readonly reply: string | undefined,
    /** Raw header block, or undefined when the message has none. */
    readonly header: Buffer | undefined,
    /**
     * Bytes; or text, or pieces of bytes, written straight into each subscriber's output (as UTF-8
     * and one after the other) so the body never needs a buffer of its own.
     */
    readonly body: OutboundBody,
    /** False for a subject unlikely to come again (a request's reply inbox): its head is not cached. */
    private readonly repeats = true,
    /**
     * Whether it leaves with the output of the socket read being handled (see NatsListener's
     * scheduleFlush); false waits for the end of the event-loop turn.
     */
    readonly prompt = true,
  ) {
    this.bodyLength = bodyLength(body);
  }

  /** "MSG <subject> " — the sid follows; as text for a one-off subject, which a cache would only churn. */
  get plainHead(): Buffer | string {
    return this.repeats ? cachedHead(plainHeads, "MSG", this.subject) : `MSG ${this.subject} `;
  }

  /** " [reply] <size>\r\n" after the sid of a MSG. */
  get plainTail(): Buffer {
    if (this.msgTail !== undefined) return this.msgTail;
    const size = this.bodyLength;
    if (this.reply !== undefined) {
      this.msgTail = Buffer.from(` ${this.reply} ${size}\r\n`);
    } else if (size < MAX_CACHED) {
      this.msgTail = sizeTails[size] ??= Buffer.from(` ${size}\r\n`);
    } else {
      this.msgTail = Buffer.from(` ${size}\r\n`);
    }
    return this.msgTail;
  }

  /** "HMSG <subject> " — the sid follows (text for a one-off subject). */
  get headerHead(): Buffer | string {
    return this.repeats ? cachedHead(headerHeads, "HMSG", this.subject) : `HMSG ${this.subject} `;
  }

  /** " [reply] <header size> <total size>\r\n" after the sid of an HMSG. */
  get headerTail(): Buffer {
    if (this.hmsgTail !== undefined) return this.hmsgTail;
    const h = this.header?.length ?? 0;
    const total = h + this.bodyLength;
    this.hmsgTail = Buffer.from(
      this.reply === undefined ? ` ${h} ${total}\r\n` : ` ${this.reply} ${h} ${total}\r\n`,
    );
    return this.hmsgTail;
  }
}
