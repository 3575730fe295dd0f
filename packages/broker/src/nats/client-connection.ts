import type { Socket } from "node:net";
import { type SecureContext, TLSSocket } from "node:tls";
import {
  type AuthenticatedUser,
  type AuthGuard,
  type AuthOutcome,
  ClientPermissions,
  type Principal,
} from "../auth/index.js";
import {
  errLine,
  ProtocolError,
  type ProtocolErrorText,
  publishViolation,
  subscribeViolation,
} from "./errors.js";
import { type InboxClaims, inboxIdOf } from "./inbox-claims.js";
import type { ResolvedOptions } from "./options.js";
import type { OutboundMessage } from "./outbound-message.js";
import { OutputBuffer } from "./output-buffer.js";
import { type ProtocolHandler, ProtocolParser } from "./parser.js";
import { hasWildcardToken, isValidSubscribeSubject, isWellFormedSubject } from "./subject.js";
import { type Subscriber, Subscription } from "./subscription.js";
import type { SubscriptionRouter } from "./subscription-router.js";

const OK = Buffer.from("+OK\r\n");
const PING = Buffer.from("PING\r\n");
const PONG = Buffer.from("PONG\r\n");
/** Queued output beyond this is written at once rather than at the end of the event-loop turn. */
const EARLY_FLUSH_BYTES = 64 * 1024;
/** How long a closing socket may take to flush before it is destroyed. */
const CLOSE_GRACE_MS = 2000;

/** What a connection needs from the listener that owns it. */
export interface ConnectionHost {
  readonly options: ResolvedOptions;
  readonly router: SubscriptionRouter;
  /** Checks credentials; undefined when clients need no credentials. */
  readonly guard: AuthGuard | undefined;
  /** Set when clients are isolated from each other (users configured). */
  readonly inboxes: InboxClaims | undefined;
  /** A valid client publish, to hand to the service or route to subscribers. */
  clientPublish(
    from: ClientConnection,
    subject: string,
    reply: string | undefined,
    header: Buffer | undefined,
    body: Buffer,
  ): void;
  /**
   * Asks for `flush()` of `conn` (undefined: of those already asked for): `prompt`, with the output
   * of the socket read being handled; otherwise at the end of the event-loop turn.
   */
  scheduleFlush(conn: ClientConnection | undefined, prompt: boolean): void;
  /** The connection stopped taking part in routing (its subscriptions are gone). */
  connectionClosed(conn: ClientConnection): void;
  /** The socket is fully gone. */
  socketClosed(conn: ClientConnection): void;
}

/** The TLS part of a connection's start; absent when TLS is off. */
export interface TlsSetup {
  secureContext: SecureContext;
  verifyClients: boolean;
}

interface ConnectOptions {
  verbose?: unknown;
  pedantic?: unknown;
  echo?: unknown;
  headers?: unknown;
  no_responders?: unknown;
  auth_token?: unknown;
  user?: unknown;
  pass?: unknown;
  nkey?: unknown;
  sig?: unknown;
  name?: unknown;
}

/** One client connection's figures (like a nats-server /connz entry). */
export interface ConnectionStats {
  id: number;
  /** The name the client gave in its CONNECT. */
  name: string | null;
  ip: string;
  port: number | null;
  /** The user it authenticated as, with users configured. */
  user: string | null;
  connectedAt: number;
  subscriptions: number;
  /** PUBs received: count and payload bytes (headers included). */
  inMsgs: number;
  inBytes: number;
  /** MSGs sent to it: count and bytes (protocol lines included). */
  outMsgs: number;
  outBytes: number;
  /** Bytes queued for it not yet taken by its socket. */
  pendingBytes: number;
}

/**
 * One client connection: parses its input, applies CONNECT settings and auth, keeps its
 * subscriptions, and batches its output into one socket write per event-loop turn.
 */
export class ClientConnection implements ProtocolHandler, Subscriber {
  echo = true;
  headers = false;
  noResponders = false;
  private verbose = false;
  private pedantic = false;
  private connected = false;
  private closed = false;
  private name: string | undefined;
  private socket: Socket;
  private readonly parser: ProtocolParser;
  private readonly subs = new Map<string, Subscription>();
  private readonly out = new OutputBuffer();
  private flushQueued = false;
  private pingsOut = 0;
  /** Input seen since the last ping tick: a talking client needs no ping. */
  private active = true;
  private authTimer: NodeJS.Timeout | undefined;
  private destroyTimer: NodeJS.Timeout | undefined;
  /** The CONNECT being checked, while its check takes time (then input is held). */
  private authenticating = false;
  /** Who the client authenticated as; undefined without auth. */
  private authenticated: AuthenticatedUser | undefined;
  /** Undefined when the user may publish and subscribe to anything. */
  private perms: ClientPermissions | undefined;
  /** Made at the first service request: most connections never need one. */
  private gone: AbortController | undefined;
  /** What went through it, for the connections list (nats-server's /connz counts). */
  private readonly traffic = { inMsgs: 0, inBytes: 0, outMsgs: 0, outBytes: 0 };
  private readonly connectedAt = Date.now();

  constructor(
    readonly id: number,
    socket: Socket,
    readonly remoteIp: string,
    private readonly host: ConnectionHost,
    /** The challenge sent in INFO for NKey users. */
    private readonly nonce?: string,
  ) {
    this.socket = socket;
    this.parser = new ProtocolParser(this, host.options);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Who the client authenticated as (undefined when the listener needs no credentials). */
  /** The name the client gave in its CONNECT, if any. */
  get clientName(): string | undefined {
    return this.name;
  }

  get principal(): Principal | undefined {
    return this.authenticated?.principal;
  }

  /** The connection as the connections list shows it (GET /api/v1/connections). */
  describe(): ConnectionStats {
    return {
      id: this.id,
      name: this.name ?? null,
      ip: this.remoteIp,
      port: this.socket.remotePort ?? null,
      user: this.principal?.name ?? null,
      connectedAt: this.connectedAt,
      subscriptions: this.subs.size,
      ...this.traffic,
      pendingBytes: this.out.length + this.socket.writableLength,
    };
  }

  /** Aborted when the connection closes: what waits on the client's behalf (a long-poll FETCH) stops. */
  get signal(): AbortSignal {
    if (this.gone === undefined) {
      this.gone = new AbortController();
      if (this.closed) this.gone.abort();
    }
    return this.gone.signal;
  }

  private get log() {
    return this.host.options.logger;
  }

  /** Sends INFO, upgrades to TLS when configured, and starts reading. */
  start(info: Buffer, tls: TlsSetup | undefined): void {
    const raw = this.socket;
    raw.setNoDelay(true);
    raw.on("error", (err) => this.socketError(err));
    // INFO always goes out in plain text: NATS clients read it before they start the TLS handshake.
    raw.write(info);
    if (tls !== undefined) {
      const secure = new TLSSocket(raw, {
        isServer: true,
        secureContext: tls.secureContext,
        requestCert: tls.verifyClients,
        rejectUnauthorized: tls.verifyClients,
      });
      secure.on("error", (err) => this.socketError(err));
      this.socket = secure;
    }
    const socket = this.socket;
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    // The server runs with allowHalfOpen so that queued replies still go out after the client's FIN.
    socket.on("end", () => this.close("client closed its side"));
    socket.on("close", () => {
      this.close("socket closed");
      clearTimeout(this.destroyTimer);
      this.host.socketClosed(this);
    });
    this.authTimer = setTimeout(() => {
      if (!this.connected) this.close("no CONNECT in time", ProtocolError.AuthenticationTimeout);
    }, this.host.options.authTimeoutMs);
    this.authTimer.unref();
  }

  private read(chunk: Buffer): void {
    this.active = true;
    try {
      this.parser.feed(chunk);
    } catch (err) {
      // A bug on our side must cost this one connection, not the process.
      this.log.error({ err, clientId: this.id }, "nats: error while handling client input");
      this.close("internal error");
    }
  }

  private socketError(err: Error): void {
    this.log.debug({ err, clientId: this.id }, "nats: socket error");
    this.close("socket error");
  }

  // ---- protocol operations -------------------------------------------------------------------

  onConnect(json: string): void {
    let opts: ConnectOptions;
    try {
      opts = JSON.parse(json) as ConnectOptions;
    } catch {
      opts = undefined as unknown as ConnectOptions;
    }
    if (typeof opts !== "object" || opts === null || Array.isArray(opts)) {
      this.close("malformed CONNECT", ProtocolError.UnknownOperation);
      return;
    }
    if (!this.connected) {
      if (this.authenticating) return;
      this.authenticate(opts);
      return;
    }
    this.apply(opts);
  }

  /**
   * Checks the first CONNECT's credentials. At once when it can; when a failing name waits its turn
   * or a bcrypt hash needs checking, the input behind the CONNECT is held until the answer. A turn
   * is never waited for longer than half the auth timeout (see AuthThrottle).
   */
  private authenticate(opts: ConnectOptions): void {
    const guard = this.host.guard;
    if (guard === undefined) {
      this.admit(opts, undefined);
      return;
    }
    const maxWaitMs = Math.floor(this.host.options.authTimeoutMs / 2);
    const outcome = guard.check("nats", this.remoteIp, opts, this.nonce, maxWaitMs);
    if (!(outcome instanceof Promise)) {
      this.settle(opts, outcome);
      return;
    }
    this.authenticating = true;
    this.parser.pause();
    this.socket.pause();
    void outcome.then(
      (result) => this.settle(opts, result),
      (err) => {
        this.log.error({ err, clientId: this.id }, "nats: checking credentials failed");
        this.settle(opts, { refusal: "invalid" });
      },
    );
  }

  private settle(opts: ConnectOptions, outcome: AuthOutcome): void {
    this.authenticating = false;
    if (this.closed) return;
    if (outcome.user === undefined) {
      // nats-server's one answer to every refusal; the log and the metrics tell a throttled one apart.
      this.close(`authorization violation (${outcome.refusal})`, ProtocolError.AuthorizationViolation);
      return;
    }
    this.admit(opts, outcome.user);
    this.socket.resume();
    this.parser.resume();
  }

  private admit(opts: ConnectOptions, user: AuthenticatedUser | undefined): void {
    this.connected = true;
    this.authenticated = user;
    if (user?.permissions !== undefined) this.perms = new ClientPermissions(user.permissions);
    clearTimeout(this.authTimer);
    this.authTimer = undefined;
    this.apply(opts);
  }

  private apply(opts: ConnectOptions): void {
    this.verbose = opts.verbose === true;
    this.pedantic = opts.pedantic === true;
    this.echo = opts.echo !== false;
    this.headers = opts.headers === true;
    this.noResponders = opts.no_responders === true;
    if (typeof opts.name === "string") this.name = opts.name;
    this.ok();
  }

  onPub(subject: string, reply: string | undefined, headerSize: number, data: Buffer): void {
    if (!this.admitted()) return;
    if (!isWellFormedSubject(subject)) {
      this.sendError(ProtocolError.InvalidSubject);
      return;
    }
    if (this.pedantic && hasWildcardToken(subject)) {
      this.sendError(ProtocolError.InvalidPublishSubject);
      return;
    }
    if (reply !== undefined && (!isWellFormedSubject(reply) || (this.pedantic && hasWildcardToken(reply)))) {
      this.sendError(ProtocolError.InvalidSubject);
      return;
    }
    if (this.perms !== undefined && !this.perms.mayPublish(subject)) {
      this.sendError(publishViolation(subject));
      return;
    }
    this.ok();
    this.traffic.inMsgs++;
    this.traffic.inBytes += data.length;
    if (headerSize < 0) {
      this.host.clientPublish(this, subject, reply, undefined, data);
    } else {
      this.host.clientPublish(this, subject, reply, data.subarray(0, headerSize), data.subarray(headerSize));
    }
  }

  onSub(subject: string, queue: string | undefined, sid: string): void {
    if (!this.admitted()) return;
    if (!isValidSubscribeSubject(subject, this.pedantic)) {
      this.sendError(ProtocolError.InvalidSubject);
      return;
    }
    // A repeated sid is ignored, as nats-server does, rather than silently replacing the first.
    if (this.subs.has(sid)) {
      this.ok();
      return;
    }
    const decision = this.perms?.maySubscribe(subject) ?? "allow";
    if (decision === "deny") {
      this.sendError(subscribeViolation(subject, queue));
      return;
    }
    const sub = new Subscription(this, subject, queue, sid);
    sub.filtered = decision === "filter";
    const inboxes = this.host.inboxes;
    const inboxId = inboxes === undefined ? undefined : inboxIdOf(subject);
    if (inboxId !== undefined && inboxId !== "*" && inboxId !== ">") {
      if (!inboxes!.claim(inboxId, this, this.principal?.name ?? "")) {
        this.log.info(
          { clientId: this.id, ip: this.remoteIp, user: this.principal?.name, subject },
          "nats: refused a subscription to another client's reply inbox",
        );
        this.sendError(subscribeViolation(subject, queue));
        return;
      }
      sub.inboxId = inboxId;
    }
    this.subs.set(sid, sub);
    this.host.router.add(sub);
    this.ok();
  }

  onUnsub(sid: string, max: number): void {
    if (!this.admitted()) return;
    const sub = this.subs.get(sid);
    if (sub !== undefined) {
      // The limit counts deliveries already made, so UNSUB 5 after 3 messages allows 2 more.
      if (max > 0 && sub.delivered < max) sub.max = max;
      else this.unsubscribe(sub);
    }
    this.ok();
  }

  onPing(): void {
    if (!this.admitted()) return;
    this.enqueue(PONG);
  }

  onPong(): void {
    this.pingsOut = 0;
  }

  onClientError(text: string): void {
    this.log.debug({ clientId: this.id, text }, "nats: client sent -ERR");
    this.close("client reported an error");
  }

  onProtocolError(text: ProtocolErrorText): void {
    this.log.debug({ clientId: this.id, ip: this.remoteIp, error: text }, "nats: protocol error");
    this.close("protocol error", text);
  }

  /** Before CONNECT, only servers without auth accept operations (telnet-style use). */
  private admitted(): boolean {
    if (this.connected || this.host.guard === undefined) return !this.closed;
    this.close("operation before CONNECT", ProtocolError.AuthorizationViolation);
    return false;
  }

  private ok(): void {
    if (this.verbose) this.enqueue(OK);
  }

  /** A non-fatal -ERR: the connection stays open. */
  private sendError(text: ProtocolErrorText | string): void {
    this.log.debug({ clientId: this.id, error: text }, "nats: client error");
    this.enqueue(errLine(text));
  }

  private unsubscribe(sub: Subscription): void {
    this.subs.delete(sub.sid);
    this.host.router.remove(sub);
    if (sub.inboxId !== undefined) this.host.inboxes?.release(sub.inboxId, this);
  }

  // ---- output --------------------------------------------------------------------------------

  deliver(sub: Subscription, msg: OutboundMessage): void {
    if (this.closed) return;
    const perms = this.perms;
    if (perms !== undefined) {
      if (sub.filtered && !perms.mayReceive(msg.subject)) return;
      if (msg.reply !== undefined && perms.tracksResponses) perms.requestReceived(msg.reply);
    }
    const out = this.out;
    const start = out.length;
    const header = msg.header;
    // A client that did not ask for headers gets the body only, like nats-server does.
    if (header !== undefined && this.headers) {
      const head = msg.headerHead;
      if (typeof head === "string") out.appendUtf8(head);
      else out.append(head);
      out.append(sub.sidBytes);
      out.append(msg.headerTail);
      out.append(header);
    } else {
      const head = msg.plainHead;
      if (typeof head === "string") out.appendUtf8(head);
      else out.append(head);
      out.append(sub.sidBytes);
      out.append(msg.plainTail);
    }
    const body = msg.body;
    if (typeof body === "string") out.appendUtf8(body);
    else if (body instanceof Uint8Array) out.append(body);
    else {
      for (const piece of body) {
        if (typeof piece === "string") out.appendUtf8(piece);
        else out.append(piece);
      }
    }
    out.appendCrlf();
    this.traffic.outMsgs++;
    this.traffic.outBytes += out.length - start;
    sub.delivered++;
    if (sub.max > 0 && sub.delivered >= sub.max) this.unsubscribe(sub);
    this.queued(msg.prompt);
  }

  private enqueue(frame: Buffer): void {
    if (this.closed) return;
    this.out.append(frame);
    this.queued();
  }

  private queued(prompt = true): void {
    // A big burst goes to the socket right away instead of piling up until the end of the turn, so
    // only bytes the peer really is not reading count against maxPendingBytes.
    if (this.out.length >= EARLY_FLUSH_BYTES) this.flush();
    const pending = this.out.length + this.socket.writableLength;
    if (pending > this.host.options.maxPendingBytes) {
      this.log.warn(
        { clientId: this.id, ip: this.remoteIp, name: this.name, pendingBytes: pending },
        "nats: slow consumer, closing connection",
      );
      this.out.clear();
      this.close("slow consumer", ProtocolError.SlowConsumer);
      return;
    }
    if (this.out.length === 0) return;
    if (!this.flushQueued) {
      this.flushQueued = true;
      this.host.scheduleFlush(this, prompt);
    } else if (prompt) {
      // Already waiting for a flush, perhaps the end-of-turn one: make sure it leaves promptly.
      this.host.scheduleFlush(undefined, true);
    }
  }

  /** Writes everything queued in one socket write. */
  flush(): void {
    this.flushQueued = false;
    const data = this.out.take();
    if (data === undefined || !this.socket.writable) return;
    this.socket.write(data);
    // Nothing left in the stream: the write went through at once and the socket holds no reference
    // to the bytes, so the buffer serves the next turn (new memory is costly to touch the first time).
    if (this.socket.writableLength === 0) this.out.reuse(data);
  }

  /** Called by the listener's ping timer every pingIntervalMs. */
  pingTick(): void {
    if (this.closed) return;
    if (this.active) {
      this.active = false;
      return;
    }
    if (this.pingsOut >= this.host.options.maxPingsOut) {
      this.log.info({ clientId: this.id, ip: this.remoteIp, name: this.name }, "nats: stale connection");
      this.close("stale connection", ProtocolError.StaleConnection);
      return;
    }
    this.pingsOut++;
    this.enqueue(PING);
  }

  /**
   * Takes the connection out of routing, sends what is queued (plus `error` if given), then ends the
   * socket; a peer that does not read the rest loses the socket after a grace period. Idempotent.
   */
  close(reason: string, error?: ProtocolErrorText): void {
    if (this.closed) return;
    this.closed = true;
    this.parser.stop();
    clearTimeout(this.authTimer);
    for (const sub of this.subs.values()) {
      this.host.router.remove(sub);
      // The client may come back (reconnect): its inboxes stay its user's for a while.
      if (sub.inboxId !== undefined) this.host.inboxes?.release(sub.inboxId, this, true);
    }
    this.subs.clear();
    this.host.connectionClosed(this);
    this.gone?.abort();
    this.log.debug(
      { clientId: this.id, ip: this.remoteIp, name: this.name, reason },
      "nats: connection closed",
    );
    if (error !== undefined) {
      this.out.append(errLine(error));
    }
    this.flush();
    const socket = this.socket;
    if (socket.destroyed) return;
    socket.end();
    this.destroyTimer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
    this.destroyTimer.unref();
  }

  /** Ends the socket at once, for a listener shutdown that ran out of drain time. */
  destroy(): void {
    this.socket.destroy();
  }
}
