import { readFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { createSecureContext } from "node:tls";
import { isMq9Subject } from "@mq9/protocol";
import { AuthGuard, type Principal, type UserDirectory } from "../auth/index.js";
import type { Mq9Request, Mq9RequestHandler } from "../transport/mq9-request.js";
import {
  ClientConnection,
  type ConnectionHost,
  type ConnectionStats,
  type TlsSetup,
} from "./client-connection.js";
import { errLine, ProtocolError } from "./errors.js";
import { InboxBindingsKeeper } from "./inbox-bindings-keeper.js";
import { InboxClaims } from "./inbox-claims.js";
import { generateNonce, generateServerId, InfoBuilder, type ServerInfo } from "./info.js";
import { type NatsListenerOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { type OutboundBody, OutboundMessage } from "./outbound-message.js";
import { isWellFormedSubject } from "./subject.js";
import { SubscriptionRouter } from "./subscription-router.js";

const RESOLVED = Promise.resolve();

const DEFAULT_DRAIN_TIMEOUT_MS = 2000;
const REFUSED_GRACE_MS = 1000;

export type { Principal };

/** What the broker itself sends: bytes, text (written as UTF-8), or pieces of either in order. */
export type OutboundPayload = Uint8Array | string | readonly (string | Uint8Array)[];

/**
 * The embedded NATS-protocol server. Any NATS client can connect, subscribe and publish; once a
 * service is set (setService), publishes on `$mq9.AI.*` go to it instead of to subscribers, and
 * its replies to the requests' reply subjects.
 */
export class NatsListener {
  private readonly options: ResolvedOptions;
  private readonly router = new SubscriptionRouter();
  private readonly serverId = generateServerId();
  private server: Server | undefined;
  private info: InfoBuilder | undefined;
  private infoFields: ServerInfo | undefined;
  private tls: TlsSetup | undefined;
  private service: Mq9RequestHandler | undefined;
  /** Connections taking part in routing, by client id. */
  private readonly clients = new Map<number, ClientConnection>();
  private readonly users: UserDirectory | undefined;
  /** Connections whose socket is still open (a closed client may still be flushing). */
  private readonly sockets = new Set<ClientConnection>();
  private readonly refused = new Set<Socket>();
  private dirty: ClientConnection[] = [];
  private promptFlushScheduled = false;
  private turnFlushScheduled = false;
  private nextClientId = 1;
  private pingTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private socketsDrained: (() => void) | undefined;
  private readonly host: ConnectionHost;
  private readonly inboxes: InboxClaims | undefined;
  /** Keeps the inboxes bound to users across a restart, in the store. */
  private readonly inboxKeeper: InboxBindingsKeeper | undefined;

  constructor(options?: NatsListenerOptions) {
    this.options = resolveOptions(options);
    const guard =
      options?.authGuard ?? AuthGuard.from(this.options.auth, this.options.authThrottle, this.options.logger);
    this.users = guard?.users;
    const inboxes = this.users?.multiUser ? new InboxClaims(this.options.inboxGraceMs) : undefined;
    this.router.inboxes = inboxes;
    this.inboxes = inboxes;
    if (inboxes !== undefined && this.options.inboxBindings !== undefined) {
      this.inboxKeeper = new InboxBindingsKeeper(this.options.inboxBindings, inboxes, this.options.logger);
    }
    // Connections see the listener only through this narrow interface.
    this.host = {
      options: this.options,
      router: this.router,
      guard,
      inboxes,
      clientPublish: (from, subject, reply, header, body) =>
        this.clientPublish(from, subject, reply, header, body),
      scheduleFlush: (conn, prompt) => this.scheduleFlush(conn, prompt),
      connectionClosed: (conn) => {
        this.clients.delete(conn.id);
      },
      socketClosed: (conn) => {
        this.sockets.delete(conn);
        if (this.sockets.size === 0) this.socketsDrained?.();
      },
    };
  }

  /**
   * Hands publishes on `$mq9.AI.*` to `service` from now on: each request carries its client's
   * principal and a signal aborted when the client's connection closes, and its reply goes to the
   * request's reply subject (only to the requester's own subscriptions when clients are isolated).
   */
  setService(service: Mq9RequestHandler): void {
    this.service = service;
  }

  /**
   * True when users are configured: clients are isolated (reply inboxes, service replies) and the
   * service should enforce ownership for the principal of each request.
   */
  get isolatesClients(): boolean {
    return this.users?.multiUser === true;
  }

  /** Every open client connection's figures, oldest first. */
  connections(): ConnectionStats[] {
    return [...this.clients.values()].map((conn) => conn.describe());
  }

  /** Number of open client connections. */
  get connectionCount(): number {
    return this.clients.size;
  }

  /** Number of subscriptions held across all connections (for metrics and tests). */
  get subscriptionCount(): number {
    return this.router.subscriptions.size;
  }

  /** Starts accepting connections; resolves with the bound address (the real port when port was 0). */
  async listen(): Promise<{ host: string; port: number }> {
    if (this.server !== undefined) throw new Error("NatsListener.listen() was already called");
    if (this.closing !== undefined) throw new Error("NatsListener was closed; create a new one");
    const { host, port, tls } = this.options;
    if (tls !== undefined) this.tls = await loadTls(tls);
    // Before any client can claim an inbox: the ones bound before a restart are their users' first.
    await this.inboxKeeper?.restore();
    // allowHalfOpen: a client that ends its side still gets what was queued for it before we close.
    const server = createServer({ allowHalfOpen: true, noDelay: true }, (socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error): void =>
        reject(new Error(`NatsListener cannot listen on ${host}:${port}: ${err.message}`, { cause: err }));
      server.once("error", fail);
      server.listen(port, host, () => {
        server.off("error", fail);
        resolve();
      });
    });
    // Only once it listens: a failed listen is the caller's one error, not also a logged one.
    server.on("error", (err) => this.options.logger.error({ err }, "nats: listener error"));
    if (this.closing !== undefined) {
      server.close();
      throw new Error("NatsListener was closed while it was starting");
    }
    const address = server.address();
    const bound = typeof address === "object" && address !== null ? address.port : port;
    this.infoFields = {
      serverId: this.serverId,
      serverName: this.options.serverName ?? this.serverId,
      host,
      port: bound,
      maxPayload: this.options.maxPayload,
      authRequired: this.users !== undefined,
      tlsRequired: this.tls !== undefined,
      tlsVerify: this.tls?.verifyClients ?? false,
    };
    this.info = new InfoBuilder(this.infoFields);
    this.inboxKeeper?.start();
    this.pingTimer = setInterval(() => this.pingAll(), this.options.pingIntervalMs);
    this.pingTimer.unref();
    this.options.logger.info({ host, port: bound, tls: this.tls !== undefined }, "nats: listening");
    return { host, port: bound };
  }

  /**
   * Adds `mq9_…` fields to the INFO that connections from now on receive (e.g. where the broker's
   * HTTP server is, so that tools given only the broker's address find it).
   */
  advertise(extensions: Record<string, unknown>): void {
    if (this.infoFields === undefined) throw new Error("NatsListener.advertise() needs listen() first");
    for (const name of Object.keys(extensions)) {
      if (!name.startsWith("mq9_"))
        throw new TypeError(`NatsListener.advertise: '${name}' must start with mq9_`);
    }
    this.infoFields = {
      ...this.infoFields,
      extensions: { ...this.infoFields.extensions, ...extensions },
    };
    this.info = new InfoBuilder(this.infoFields);
  }

  /**
   * A server-originated message delivered to every matching subscription; a text payload is
   * written to each subscriber as UTF-8, a list of pieces one after the other.
   */
  publish(subject: string, payload: OutboundPayload, header?: Uint8Array): void {
    // The subject is written into MSG lines verbatim, so whitespace would corrupt the stream.
    if (!isWellFormedSubject(subject) || /\s/.test(subject)) {
      throw new TypeError(`NatsListener.publish: invalid subject ${JSON.stringify(subject)}`);
    }
    this.deliver(subject, payload, header, true, true);
  }

  /**
   * Answers a service request on its reply subject, which was checked when the request came in.
   * A reply inbox is unlikely to come again, so its match result is not cached. `prompt`: the
   * reply is made while its request's socket read is handled (see scheduleFlush). With clients
   * isolated, only the requester's own subscriptions (`requesterId`) get the reply.
   */
  private reply(to: string, payload: OutboundPayload, prompt: boolean, requesterId: number): void {
    let only: ClientConnection | undefined;
    if (this.users?.multiUser) {
      only = this.clients.get(requesterId);
      if (only === undefined) return;
    }
    this.deliver(to, payload, undefined, false, prompt, only);
  }

  private deliver(
    subject: string,
    payload: OutboundPayload,
    header: Uint8Array | undefined,
    repeats: boolean,
    prompt: boolean,
    only?: ClientConnection,
  ): void {
    const body: OutboundBody =
      typeof payload === "string" || Array.isArray(payload) ? payload : asBuffer(payload as Uint8Array);
    const msg = new OutboundMessage(subject, undefined, header && asBuffer(header), body, repeats, prompt);
    this.router.route(msg, undefined, repeats, only);
  }

  /** Stops accepting, flushes what is queued to clients, then closes every connection. */
  close(options: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
    return this.closing;
  }

  private async shutdown(drainTimeoutMs: number): Promise<void> {
    clearInterval(this.pingTimer);
    const server = this.server;
    if (server === undefined) return;
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const conn of [...this.clients.values()]) conn.close("listener closing");
    for (const socket of this.refused) socket.destroy();
    // Every connection's inboxes are now in their grace: kept for the clients' return.
    await this.inboxKeeper?.close();
    if (this.sockets.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.socketsDrained = resolve;
        timer = setTimeout(resolve, drainTimeoutMs);
      });
      clearTimeout(timer);
      for (const conn of this.sockets) conn.destroy();
    }
    await serverClosed;
    this.options.logger.info("nats: listener closed");
  }

  private accept(socket: Socket): void {
    const info = this.info;
    const ip = (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    if (info === undefined || this.closing !== undefined) {
      socket.destroy();
      return;
    }
    const id = this.nextClientId++;
    if (this.clients.size >= this.options.maxConnections) {
      this.options.logger.warn(
        { ip, max: this.options.maxConnections },
        "nats: maximum connections exceeded",
      );
      this.refuse(socket, info.line(id, ip));
      return;
    }
    const nonce = this.users?.wantsNonce ? generateNonce() : undefined;
    const conn = new ClientConnection(id, socket, ip, this.host, nonce);
    this.clients.set(id, conn);
    this.sockets.add(conn);
    this.options.logger.debug({ clientId: id, ip }, "nats: connection accepted");
    conn.start(info.line(id, ip, nonce), this.tls);
  }

  /** INFO first so that clients report the -ERR instead of an unexpected-response error. */
  private refuse(socket: Socket, info: Buffer): void {
    this.refused.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => this.refused.delete(socket));
    socket.end(Buffer.concat([info, errLine(ProtocolError.MaxConnections)]));
    setTimeout(() => socket.destroy(), REFUSED_GRACE_MS).unref();
  }

  private clientPublish(
    from: ClientConnection,
    subject: string,
    reply: string | undefined,
    header: Buffer | undefined,
    body: Buffer,
  ): void {
    const service = this.service;
    if (service !== undefined && isMq9Subject(subject)) {
      const request: Mq9Request = {
        subject,
        header,
        payload: body,
        signal: from.signal,
        principal: from.principal,
        clientName: from.clientName,
      };
      try {
        service.answer(request, (answer, prompt) => {
          if (reply) this.reply(reply, answer, prompt, from.id);
        });
      } catch (err) {
        this.options.logger.error({ err, subject, clientId: from.id }, "nats: service handler threw");
      }
      return;
    }
    const delivered = this.router.route(new OutboundMessage(subject, reply, header, body), from);
    if (delivered === 0 && reply !== undefined && from.headers && from.noResponders && !from.isClosed) {
      this.router.noResponders(from, reply);
    }
  }

  /**
   * Queues `conn` (when given) for a flush. Like nats-server, output leaves once the input that
   * caused it is handled: `prompt` output (deliveries of a socket read's PUBs, SEND replies, which
   * group commit answers in the same microtask run) leaves at the end of that run, one write per
   * connection. Waiting for the end of the event-loop turn merged the replies of every read in the
   * turn, so a client's SENDs moved in one lock-step batch: broker and client took turns on one
   * core. Replies made later, in their own turn (a DISCOVER, a long-poll FETCH), still wait for
   * the end of the turn, so that those of one turn share a write: a write each would cost the
   * clients a socket read each.
   */
  private scheduleFlush(conn: ClientConnection | undefined, prompt: boolean): void {
    if (conn) this.dirty.push(conn);
    if (prompt) {
      if (this.promptFlushScheduled) return;
      this.promptFlushScheduled = true;
      // Not queueMicrotask, which wraps each callback in an AsyncResource (see SendBatcher).
      RESOLVED.then(this.promptFlush);
    } else if (!this.promptFlushScheduled && !this.turnFlushScheduled) {
      this.turnFlushScheduled = true;
      setImmediate(this.turnFlush);
    }
  }

  private readonly promptFlush = (): void => {
    this.promptFlushScheduled = false;
    this.flushDirty();
  };

  private readonly turnFlush = (): void => {
    this.turnFlushScheduled = false;
    this.flushDirty();
  };

  private flushDirty(): void {
    const dirty = this.dirty;
    this.dirty = [];
    for (let i = 0; i < dirty.length; i++) dirty[i].flush();
  }

  private pingAll(): void {
    for (const conn of this.clients.values()) conn.pingTick();
    this.inboxes?.sweep();
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

async function loadTls(tls: { certFile: string; keyFile: string; caFile?: string }): Promise<TlsSetup> {
  const read = async (what: string, file: string): Promise<Buffer> => {
    try {
      return await readFile(file);
    } catch (err) {
      throw new Error(`NatsListener TLS ${what} file ${file} cannot be read: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  const [cert, key, ca] = await Promise.all([
    read("certificate", tls.certFile),
    read("key", tls.keyFile),
    tls.caFile === undefined ? undefined : read("CA", tls.caFile),
  ]);
  try {
    return { secureContext: createSecureContext({ cert, key, ca }), verifyClients: ca !== undefined };
  } catch (err) {
    throw new Error(
      `NatsListener TLS setup failed (check certFile/keyFile/caFile): ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}
