/**
 * One routed message. The MSG/HMSG control line differs per subscriber only in the sid, so the parts
 * around it are encoded once per publish and shared by every delivery; payload bytes are never
 * copied until the per-connection flush.
 */
export class OutboundMessage {
  private msgHead: Buffer | undefined;
  private msgTail: Buffer | undefined;
  private hmsgHead: Buffer | undefined;
  private hmsgTail: Buffer | undefined;

  constructor(
    readonly subject: string,
    readonly reply: string | undefined,
    /** Raw header block, or undefined when the message has none. */
    readonly header: Buffer | undefined,
    readonly body: Buffer,
  ) {}

  /** "MSG <subject> " — the sid follows. */
  get plainHead(): Buffer {
    this.msgHead ??= Buffer.from(`MSG ${this.subject} `);
    return this.msgHead;
  }

  /** " [reply] <size>\r\n" after the sid of a MSG. */
  get plainTail(): Buffer {
    this.msgTail ??= Buffer.from(
      this.reply === undefined ? ` ${this.body.length}\r\n` : ` ${this.reply} ${this.body.length}\r\n`,
    );
    return this.msgTail;
  }

  /** "HMSG <subject> " — the sid follows. */
  get headerHead(): Buffer {
    this.hmsgHead ??= Buffer.from(`HMSG ${this.subject} `);
    return this.hmsgHead;
  }

  /** " [reply] <header size> <total size>\r\n" after the sid of an HMSG. */
  get headerTail(): Buffer {
    const h = this.header?.length ?? 0;
    const total = h + this.body.length;
    this.hmsgTail ??= Buffer.from(
      this.reply === undefined ? ` ${h} ${total}\r\n` : ` ${this.reply} ${h} ${total}\r\n`,
    );
    return this.hmsgTail;
  }
}
