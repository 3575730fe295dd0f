import { readFileSync } from "node:fs";
import {
  type ConnectionOptions,
  connect,
  credsAuthenticator,
  Events,
  type Msg,
  type NatsConnection,
  type Subscription,
} from "nats";
import type { Logger } from "../logger.js";
import type { ClusterOptions } from "./cluster-options.js";
import { logRefusedSubscription, PERMISSIONS_HINT } from "./refused-subscription.js";
import { UndeliveredReplies } from "./undelivered-replies.js";

/** FETCHes are the requests whose reply hands something out (leases) that an absent requester would hold. */
const FETCH_SUBJECTS = "$mq9.AI.MSG.FETCH.";

/** Connect options for the NATS cluster: reconnect for ever, auth and TLS passed through. */
export function natsConnectOptions(options: ClusterOptions, purpose: string): ConnectionOptions {
  const connectOptions: ConnectionOptions = {
    servers: options.servers,
    name: `mq9-${options.nodeId}-${purpose}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: false,
    pingInterval: 10_000,
    // The order of --nats is the operator's: a node beside its own nats-server lists it first.
    noRandomize: true,
  };
  if (options.token) connectOptions.token = options.token;
  if (options.user) {
    connectOptions.user = options.user;
    connectOptions.pass = options.password ?? "";
  }
  if (options.credsFile) connectOptions.authenticator = credsAuthenticator(readFileSync(options.credsFile));
  if (options.tls) connectOptions.tls = { ...options.tls };
  return connectOptions;
}

/** Opens the node's NATS connection, logging disconnects and reconnects with the server's address. */
export async function connectToCluster(
  options: ClusterOptions,
  purpose: string,
  logger: Logger,
): Promise<NatsConnection> {
  let nc: NatsConnection;
  try {
    nc = await connect(natsConnectOptions(options, purpose));
  } catch (err) {
    // nats.js reports a server that closes the handshake (over max_connections, or an account
    // at its connection limit) only as a timeout; the server's log says which.
    const refused =
      (err as { code?: string }).code === "TIMEOUT"
        ? " (no server completed the handshake: unreachable, or refusing connections over a connection limit; the nats-server log says which)"
        : "";
    throw new Error(
      `cannot reach the NATS cluster at ${options.servers.join(", ")}: ${(err as Error).message}${refused}; check --nats and the cluster's credentials`,
      { cause: err },
    );
  }
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect)
        logger.warn(`nats: disconnected from ${status.data}; reconnecting`);
      else if (status.type === Events.Reconnect) logger.info(`nats: reconnected to ${status.data}`);
      else if (status.type === Events.Error) {
        // A refused publish arrives as its code alone (the server's text names the subject).
        const code = String(status.data);
        logger.warn(
          code === "PERMISSIONS_VIOLATION"
            ? `nats: ${code}: the cluster refused this node a publish; ${PERMISSIONS_HINT}`
            : `nats: ${code}`,
        );
      }
    }
  })().catch(() => {});
  return nc;
}

/** One request as the attachment hands it to the broker. */
export interface AttachedRequest {
  subject: string;
  header?: Uint8Array;
  payload: Uint8Array;
  /** Aborted after the reply when the reply reached no one (set for FETCH requests). */
  undelivered?: AbortSignal;
  /** Sends the reply (no-op for a request without a reply subject). */
  reply(payload: Uint8Array | string): void;
}

/**
 * The cluster transport: serves `$mq9.AI.>` from a NATS cluster in one queue group, so each
 * request goes to one node and a node that dies stops receiving them at once. Replies go back
 * through NATS. Subscriptions survive reconnects (the client resubscribes).
 */
export class NatsAttachment {
  private subscription?: Subscription;
  private inFlight = 0;
  private idle?: () => void;
  private readonly undelivered: UndeliveredReplies;
  private refusal?: Error;

  constructor(
    readonly connection: NatsConnection,
    private readonly queueGroup: string,
    private readonly logger: Logger,
  ) {
    this.undelivered = new UndeliveredReplies(connection, logger);
  }

  /** Starts taking requests; `handle` answers each through its `reply`. */
  serve(handle: (request: AttachedRequest) => void): void {
    this.subscription = this.connection.subscribe("$mq9.AI.>", {
      queue: this.queueGroup,
      callback: (err, msg) => {
        if (err) {
          this.refusal = err;
          logRefusedSubscription(this.logger, "$mq9.AI.>", err, "this node receives no request");
          return;
        }
        this.inFlight++;
        let answered = false;
        const watched =
          msg.reply && msg.subject.startsWith(FETCH_SUBJECTS) ? new AbortController() : undefined;
        handle({
          subject: msg.subject,
          header: rawHeader(msg),
          payload: msg.data,
          undelivered: watched?.signal,
          reply: (payload) => {
            if (answered) return;
            answered = true;
            if (msg.reply) {
              const data = typeof payload === "string" ? Buffer.from(payload) : payload;
              try {
                // A FETCH's reply asks for a status: a no-responders answer says no one took it.
                if (watched) {
                  this.connection.publish(msg.reply, data, {
                    reply: this.undelivered.replySubjectFor(watched),
                  });
                } else msg.respond(data);
              } catch {
                // The connection is closing; the requester times out.
              }
            }
            this.inFlight--;
            if (this.inFlight === 0) this.idle?.();
          },
        });
      },
    });
  }

  /** Whether the connection to a nats-server is up right now. */
  get connected(): boolean {
    return !this.connection.isClosed() && !this.connection.isDraining() && this.connection.info !== undefined;
  }

  /** Why the nats-servers refused to hand this node requests, when they did. */
  get refused(): string | undefined {
    return this.refusal?.message;
  }

  /** The server this node is connected to now. */
  get server(): string | undefined {
    return this.connection.getServer() || undefined;
  }

  /** Stops taking new requests; those in hand are still answered. */
  async stopReceiving(): Promise<void> {
    const sub = this.subscription;
    this.subscription = undefined;
    if (sub && !sub.isClosed()) await sub.drain().catch(() => {});
  }

  /** Waits (up to `timeoutMs`) for the requests in hand, then closes the connection. */
  async close(timeoutMs = 5_000): Promise<void> {
    await this.stopReceiving();
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.undelivered.close();
    if (!this.connection.isClosed()) await this.connection.drain().catch(() => this.connection.close());
  }
}

/** The request's NATS header block as bytes, as the embedded listener hands it over. */
function rawHeader(msg: Msg): Uint8Array | undefined {
  const headers = msg.headers as (Msg["headers"] & { encode?: () => Uint8Array }) | undefined;
  return headers?.encode?.();
}
