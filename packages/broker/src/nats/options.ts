import { Defaults } from "@mq9/protocol";
import type { AuthGuard, AuthOptions, AuthThrottleOptions } from "../auth/index.js";
import { BrokerDefaults } from "../broker-defaults.js";
import { type Logger, silentLogger } from "../logger.js";
import type { InboxBindingsStore } from "../store/inbox-bindings.js";
import { DEFAULT_INBOX_GRACE_MS } from "./inbox-claims.js";

export type { Logger };

/** Options of the embedded NATS-protocol listener; every field has a default. */
export interface NatsListenerOptions {
  /** Interface to bind; default "127.0.0.1". */
  host?: string;
  /** TCP port; default 4332; 0 picks a free port. */
  port?: number;
  /** Largest PUB/HPUB payload (headers included) in bytes; advertised in INFO. Default 1 MiB. */
  maxPayload?: number;
  /** Longest protocol control line in bytes. Default 4096. */
  maxControlLine?: number;
  /** Connections beyond this are refused with -ERR 'maximum connections exceeded'. Default 65536. */
  maxConnections?: number;
  /** Per-connection outbound bytes (queued + in the socket) before a slow-consumer disconnect. Default 64 MiB. */
  maxPendingBytes?: number;
  /**
   * How often connections are checked for liveness (nats-server's ping_interval): a client that
   * sent nothing for a whole interval gets a PING. Default 30 000 ms.
   */
  pingIntervalMs?: number;
  /**
   * Unanswered PINGs tolerated (nats-server's ping_max): at the next check after that many, the
   * connection is closed as stale. A client that stopped reading is found dead within
   * (maxPingsOut + 2) × pingIntervalMs. Default 2.
   */
  maxPingsOut?: number;
  /** CONNECT (and the TLS handshake when TLS is on) must complete within this. Default 2000 ms. */
  authTimeoutMs?: number;
  /**
   * Clients must present this token, or this user/password pair, in CONNECT; or, with `users`, the
   * credentials of one of the users, whose permissions then apply (see docs/security.md).
   */
  auth?: AuthOptions;
  /** How failed authentications slow down later attempts from the same address. */
  authThrottle?: AuthThrottleOptions;
  /**
   * Checks credentials instead of one built from `auth` and `authThrottle`: the broker shares its
   * guard with its HTTP server, so a guesser is slowed on both ports alike.
   */
  authGuard?: AuthGuard;
  /**
   * With `auth.users`: how long a reply inbox whose connection closed stays bound to its user, so
   * that no other user can claim it before the client reconnects. Default 120 000 ms.
   */
  inboxGraceMs?: number;
  /** With `auth.users`: where the bound inboxes are kept across a restart (none: memory only). */
  inboxBindings?: InboxBindingsStore;
  /** PEM files; when set every client must upgrade to TLS after INFO. `caFile` turns on client-certificate verification. */
  tls?: { certFile: string; keyFile: string; caFile?: string };
  /** Advertised in INFO as server_name; defaults to the generated server id. */
  serverName?: string;
  logger?: Logger;
}

/** Options after defaults were applied; internal to the listener. */
export interface ResolvedOptions {
  host: string;
  port: number;
  maxPayload: number;
  maxControlLine: number;
  maxConnections: number;
  maxPendingBytes: number;
  pingIntervalMs: number;
  maxPingsOut: number;
  authTimeoutMs: number;
  auth?: AuthOptions;
  authThrottle?: AuthThrottleOptions;
  inboxGraceMs: number;
  inboxBindings?: InboxBindingsStore;
  tls?: { certFile: string; keyFile: string; caFile?: string };
  serverName?: string;
  logger: Logger;
}

export { DEFAULT_INBOX_GRACE_MS };

/** Liveness defaults (the reason for the values is in BrokerDefaults). */
export const DEFAULT_PING_INTERVAL_MS = BrokerDefaults.pingIntervalMs;
export const DEFAULT_MAX_PINGS_OUT = BrokerDefaults.maxPingsOut;

function positive(name: string, value: number | undefined, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0 || (!allowZero && value === 0)) {
    throw new RangeError(
      `NatsListener option ${name} must be a ${allowZero ? "non-negative" : "positive"} integer, got ${value}`,
    );
  }
  return value;
}

/** Applies defaults and rejects nonsensical values with a message that names the option. */
export function resolveOptions(options: NatsListenerOptions = {}): ResolvedOptions {
  const auth = options.auth;
  const hasAuth =
    auth !== undefined && (auth.token !== undefined || auth.user !== undefined || auth.users !== undefined);
  if (auth?.user !== undefined && auth.password === undefined) {
    throw new RangeError("NatsListener option auth.user needs auth.password as well");
  }
  if (auth?.password === "") {
    throw new RangeError("NatsListener option auth.password is empty; an empty password is refused");
  }
  if (auth?.token === "") {
    throw new RangeError("NatsListener option auth.token is empty; an empty token is refused");
  }
  return {
    host: options.host ?? BrokerDefaults.host,
    port: positive("port", options.port, Defaults.port, true),
    maxPayload: positive("maxPayload", options.maxPayload, Defaults.maxPayload),
    maxControlLine: positive("maxControlLine", options.maxControlLine, 4096),
    maxConnections: positive("maxConnections", options.maxConnections, BrokerDefaults.maxConnections),
    maxPendingBytes: positive("maxPendingBytes", options.maxPendingBytes, BrokerDefaults.maxPendingBytes),
    pingIntervalMs: positive("pingIntervalMs", options.pingIntervalMs, DEFAULT_PING_INTERVAL_MS),
    maxPingsOut: positive("maxPingsOut", options.maxPingsOut, DEFAULT_MAX_PINGS_OUT),
    authTimeoutMs: positive("authTimeoutMs", options.authTimeoutMs, 2000),
    auth: hasAuth ? auth : undefined,
    authThrottle: options.authThrottle,
    inboxGraceMs: positive("inboxGraceMs", options.inboxGraceMs, DEFAULT_INBOX_GRACE_MS, true),
    inboxBindings: options.inboxBindings,
    tls: options.tls,
    serverName: options.serverName,
    logger: options.logger ?? silentLogger,
  };
}
