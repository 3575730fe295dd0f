import { ProtocolError, type ProtocolErrorText } from "./errors.js";

/** What the parser reports, one call per complete client operation. */
export interface ProtocolHandler {
  onConnect(json: string): void;
  /** `headerSize` is -1 for PUB; for HPUB the first `headerSize` bytes of `data` are the header block. */
  onPub(subject: string, reply: string | undefined, headerSize: number, data: Buffer): void;
  onSub(subject: string, queue: string | undefined, sid: string): void;
  onUnsub(sid: string, max: number): void;
  onPing(): void;
  onPong(): void;
  /** A client-sent -ERR: the peer gave up on us. */
  onClientError(text: string): void;
  /** A fatal protocol error; the parser has stopped and will ignore further input. */
  onProtocolError(text: ProtocolErrorText): void;
}

export interface ParserLimits {
  maxControlLine: number;
  maxPayload: number;
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const MAX_ARGS = 4;

enum State {
  Control,
  Payload,
  Stopped,
}

/** A malformed control line; thrown inside the parser only and turned into -ERR. */
class ParseFailure {
  constructor(readonly text: ProtocolErrorText) {}
}

const unknownOp = new ParseFailure(ProtocolError.UnknownOperation);

/**
 * Incremental parser for the client side of the NATS protocol. Input may be split anywhere across
 * chunks. It works on the Buffers straight from the socket: a payload that arrives whole is handed on
 * as a view into the chunk (Node allocates a fresh buffer for every read, so views stay valid), and
 * only a control line or payload that straddles chunks is copied. Buffered bytes never exceed
 * maxControlLine, or maxPayload + 2 while a payload is pending.
 */
export class ProtocolParser {
  private state = State.Control;
  /** Start of a control line that has not ended yet. */
  private partialLine: Buffer | undefined;
  /** Pieces of a payload that straddles chunks. */
  private payloadParts: Buffer[] = [];
  private payloadHave = 0;
  // The operation whose payload is awaited.
  private pubSubject = "";
  private pubReply: string | undefined;
  private pubHeaderSize = -1;
  private pubSize = 0;
  private lastSubject = "";
  // Token boundaries of the current control line, reused to avoid allocating per line.
  private readonly argStart = new Int32Array(MAX_ARGS + 1);
  private readonly argEnd = new Int32Array(MAX_ARGS + 1);
  /** Input that arrived while paused, replayed in order by resume(). */
  private held: Buffer[] | undefined;

  constructor(
    private readonly handler: ProtocolHandler,
    private readonly limits: ParserLimits,
  ) {}

  /** Makes the parser ignore all further input (the connection is closing). */
  stop(): void {
    this.state = State.Stopped;
    this.held = undefined;
    this.partialLine = undefined;
    this.payloadParts = [];
  }

  get stopped(): boolean {
    return this.state === State.Stopped;
  }

  /**
   * Holds every operation after the current one until resume(): a CONNECT whose credentials take
   * time to check (a bcrypt hash, an authentication throttle) must be settled before the PUBs and
   * SUBs that the client sent right behind it are handled.
   */
  pause(): void {
    this.held ??= [];
  }

  /** Handles the input held since pause(), then goes on as usual. */
  resume(): void {
    const held = this.held;
    this.held = undefined;
    if (held === undefined) return;
    for (let i = 0; i < held.length; i++) {
      // A CONNECT among the held input may pause the parser again.
      const heldAgain = this.held as Buffer[] | undefined;
      if (heldAgain !== undefined) {
        heldAgain.push(...held.slice(i));
        return;
      }
      this.feed(held[i]);
    }
  }

  feed(chunk: Buffer): void {
    const len = chunk.length;
    let pos = 0;
    while (pos < len) {
      if (this.held !== undefined) {
        if (this.state !== State.Stopped) this.held.push(pos === 0 ? chunk : chunk.subarray(pos));
        return;
      }
      if (this.state === State.Control) {
        const nl = chunk.indexOf(LF, pos);
        if (nl < 0) {
          this.keepPartialLine(chunk, pos);
          return;
        }
        try {
          if (this.partialLine === undefined) {
            this.controlLine(chunk, pos, nl);
          } else {
            const line = Buffer.concat([this.partialLine, chunk.subarray(pos, nl)]);
            this.partialLine = undefined;
            this.controlLine(line, 0, line.length);
          }
        } catch (err) {
          if (!(err instanceof ParseFailure)) throw err;
          this.fail(err.text);
          return;
        }
        pos = nl + 1;
      } else if (this.state === State.Payload) {
        pos = this.payload(chunk, pos);
      } else {
        return;
      }
    }
  }

  private keepPartialLine(chunk: Buffer, pos: number): void {
    const have = this.partialLine?.length ?? 0;
    if (have + chunk.length - pos > this.limits.maxControlLine) {
      this.fail(ProtocolError.MaxControlLine);
      return;
    }
    const rest = chunk.subarray(pos);
    this.partialLine = this.partialLine === undefined ? rest : Buffer.concat([this.partialLine, rest]);
  }

  private fail(text: ProtocolErrorText): void {
    this.stop();
    this.handler.onProtocolError(text);
  }

  /** Consumes payload bytes from `pos`; returns the new position. */
  private payload(chunk: Buffer, pos: number): number {
    const need = this.pubSize + 2;
    const avail = chunk.length - pos;
    let data: Buffer;
    let end: number;
    if (this.payloadHave === 0 && avail >= need) {
      data = chunk;
      end = pos + need;
    } else {
      const take = Math.min(need - this.payloadHave, avail);
      this.payloadParts.push(chunk.subarray(pos, pos + take));
      this.payloadHave += take;
      if (this.payloadHave < need) return pos + take;
      data = Buffer.concat(this.payloadParts, need);
      this.payloadParts = [];
      this.payloadHave = 0;
      end = pos + take;
      pos = 0;
    }
    const size = this.pubSize;
    if (data[pos + size] !== CR || data[pos + size + 1] !== LF) {
      this.fail(ProtocolError.UnknownOperation);
      return chunk.length;
    }
    this.state = State.Control;
    this.handler.onPub(this.pubSubject, this.pubReply, this.pubHeaderSize, data.subarray(pos, pos + size));
    return end;
  }

  private controlLine(buf: Buffer, start: number, end: number): void {
    if (end - start > this.limits.maxControlLine) throw new ParseFailure(ProtocolError.MaxControlLine);
    if (end > start && buf[end - 1] === CR) end--;
    // Skip leading whitespace; a blank line is ignored (telnet users hit Enter).
    while (start < end && (buf[start] === SPACE || buf[start] === TAB)) start++;
    if (start === end) return;
    let opEnd = start;
    while (opEnd < end && buf[opEnd] !== SPACE && buf[opEnd] !== TAB) opEnd++;
    const opLen = opEnd - start;
    const c0 = buf[start] | 0x20;
    switch (c0) {
      case 0x70: // p
        if (opLen === 3 && isOp(buf, start, "pub")) {
          this.pub(buf, opEnd, end, false);
          return;
        }
        if (opLen === 4 && isOp(buf, start, "ping")) {
          this.noArgs(buf, opEnd, end, "ping");
          return;
        }
        if (opLen === 4 && isOp(buf, start, "pong")) {
          this.noArgs(buf, opEnd, end, "pong");
          return;
        }
        break;
      case 0x68: // h
        if (opLen === 4 && isOp(buf, start, "hpub")) {
          this.pub(buf, opEnd, end, true);
          return;
        }
        break;
      case 0x73: // s
        if (opLen === 3 && isOp(buf, start, "sub")) {
          this.sub(buf, opEnd, end);
          return;
        }
        break;
      case 0x75: // u
        if (opLen === 5 && isOp(buf, start, "unsub")) {
          this.unsub(buf, opEnd, end);
          return;
        }
        break;
      case 0x63: // c
        if (opLen === 7 && isOp(buf, start, "connect")) {
          this.handler.onConnect(buf.toString("utf8", opEnd, end));
          return;
        }
        break;
      case 0x69: // i — a client may echo INFO back; nats-server ignores it too.
        if (opLen === 4 && isOp(buf, start, "info")) return;
        break;
      case 0x2b: // +
        if (opLen === 3 && isOp(buf, start, "+ok")) return;
        break;
      case 0x2d: // -
        if (opLen === 4 && isOp(buf, start, "-err")) {
          this.handler.onClientError(buf.toString("utf8", opEnd, end).trim());
          return;
        }
        break;
    }
    throw unknownOp;
  }

  private noArgs(buf: Buffer, from: number, end: number, op: "ping" | "pong"): void {
    if (this.split(buf, from, end) !== 0) throw unknownOp;
    if (op === "ping") this.handler.onPing();
    else this.handler.onPong();
  }

  private pub(buf: Buffer, from: number, end: number, withHeaders: boolean): void {
    const n = this.split(buf, from, end);
    const s = this.argStart;
    const e = this.argEnd;
    let reply: string | undefined;
    let headerSize = -1;
    let size: number;
    if (withHeaders) {
      if (n !== 3 && n !== 4) throw unknownOp;
      if (n === 4) reply = buf.toString("utf8", s[1], e[1]);
      headerSize = parseSize(buf, s[n - 2], e[n - 2]);
      size = parseSize(buf, s[n - 1], e[n - 1]);
      if (headerSize > size) throw unknownOp;
    } else {
      if (n !== 2 && n !== 3) throw unknownOp;
      if (n === 3) reply = buf.toString("utf8", s[1], e[1]);
      size = parseSize(buf, s[n - 1], e[n - 1]);
    }
    if (size > this.limits.maxPayload) throw new ParseFailure(ProtocolError.MaxPayload);
    this.pubSubject = this.subject(buf, s[0], e[0]);
    this.pubReply = reply;
    this.pubHeaderSize = headerSize;
    this.pubSize = size;
    this.state = State.Payload;
  }

  private sub(buf: Buffer, from: number, end: number): void {
    const n = this.split(buf, from, end);
    if (n !== 2 && n !== 3) throw unknownOp;
    const s = this.argStart;
    const e = this.argEnd;
    const subject = this.subject(buf, s[0], e[0]);
    const queue = n === 3 ? buf.toString("utf8", s[1], e[1]) : undefined;
    this.handler.onSub(subject, queue, buf.toString("utf8", s[n - 1], e[n - 1]));
  }

  private unsub(buf: Buffer, from: number, end: number): void {
    const n = this.split(buf, from, end);
    if (n !== 1 && n !== 2) throw unknownOp;
    const s = this.argStart;
    const e = this.argEnd;
    const max = n === 2 ? parseSize(buf, s[1], e[1]) : 0;
    this.handler.onUnsub(buf.toString("utf8", s[0], e[0]), max);
  }

  /**
   * Decodes a subject, reusing the previous string when the bytes are the same ASCII subject again.
   * Publishers mostly repeat subjects; a reused string skips the decode and keeps its cached hash
   * for the sublist lookup.
   */
  private subject(buf: Buffer, start: number, end: number): string {
    const last = this.lastSubject;
    const len = end - start;
    if (last.length === len) {
      let i = 0;
      while (i < len && buf[start + i] === last.charCodeAt(i)) i++;
      if (i === len) return last;
    }
    const subject = buf.toString("utf8", start, end);
    // Only an ASCII subject has one char per byte, which the comparison above relies on.
    this.lastSubject = subject.length === len ? subject : "";
    return subject;
  }

  /** Records whitespace-separated argument boundaries; returns their count (MAX_ARGS + 1 means too many). */
  private split(buf: Buffer, from: number, end: number): number {
    let n = 0;
    let i = from;
    while (i < end) {
      while (i < end && (buf[i] === SPACE || buf[i] === TAB)) i++;
      if (i === end) break;
      if (n > MAX_ARGS) return n;
      this.argStart[n] = i;
      while (i < end && buf[i] !== SPACE && buf[i] !== TAB) i++;
      this.argEnd[n] = i;
      n++;
    }
    return n;
  }
}

/** Case-insensitive comparison of an operation name with a lower-case literal. */
function isOp(buf: Buffer, start: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = buf[start + i];
    // Only letters fold; `| 0x20` would also map e.g. '\r' onto '-'.
    const folded = c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
    if (folded !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** Decimal digits only, at most 12 of them (far above any sane payload limit). */
function parseSize(buf: Buffer, start: number, end: number): number {
  const len = end - start;
  if (len === 0 || len > 12) throw unknownOp;
  let value = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i] - 0x30;
    if (d < 0 || d > 9) throw unknownOp;
    value = value * 10 + d;
  }
  return value;
}
