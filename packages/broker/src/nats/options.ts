import { type Logger, silentLogger } from "../logger.js";

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
  /** How often an idle client is pinged. Default 120 000 ms. */
  pingIntervalMs?: number;
  /** Unanswered pings tolerated before the connection is closed as stale. Default 2. */
  maxPingsOut?: number;
  /** CONNECT (and the TLS handshake when TLS is on) must complete within this. Default 2000 ms. */
  authTimeoutMs?: number;
  /** Clients must present this token, or this user/password pair, in CONNECT. */
  auth?: { token?: string; user?: string; password?: string };
  /** PEM files; when set every client must upgrade to TLS after INFO. `caFile` turns on client-certificate verification. */
  tls?: { certFile: string; keyFile: string; caFile?: string };
  /** Advertised in INFO as server_name; defaults to the generated server id. */
  serverName?: string;
  logger?: Logger;
}

/** One publish addressed to the service (see NatsListener.setService). */
export interface ServiceRequest {
  subject: string;
  /** Undefined when published without a reply subject. */
  reply?: string;
  /**
   * The raw header block exactly as sent with HPUB ("NATS/1.0\r\n...\r\n\r\n"); undefined for PUB.
   * Like `payload`, a view into a socket read buffer that the listener never writes to again; copy
   * it if you keep it beyond the call, since a view pins the whole read buffer (up to 64 KiB).
   */
  header?: Uint8Array;
  payload: Uint8Array;
  clientId: number;
}

export type ServiceHandler = (request: ServiceRequest) => void;

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
  auth?: { token?: string; user?: string; password?: string };
  tls?: { certFile: string; keyFile: string; caFile?: string };
  serverName?: string;
  logger: Logger;
}

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
  const hasAuth = auth !== undefined && (auth.token !== undefined || auth.user !== undefined);
  if (auth?.user !== undefined && auth.password === undefined) {
    throw new RangeError("NatsListener option auth.user needs auth.password as well");
  }
  return {
    host: options.host ?? "127.0.0.1",
    port: positive("port", options.port, 4332, true),
    maxPayload: positive("maxPayload", options.maxPayload, 1024 * 1024),
    maxControlLine: positive("maxControlLine", options.maxControlLine, 4096),
    maxConnections: positive("maxConnections", options.maxConnections, 65_536),
    maxPendingBytes: positive("maxPendingBytes", options.maxPendingBytes, 64 * 1024 * 1024),
    pingIntervalMs: positive("pingIntervalMs", options.pingIntervalMs, 120_000),
    maxPingsOut: positive("maxPingsOut", options.maxPingsOut, 2),
    authTimeoutMs: positive("authTimeoutMs", options.authTimeoutMs, 2000),
    auth: hasAuth ? auth : undefined,
    tls: options.tls,
    serverName: options.serverName,
    logger: options.logger ?? silentLogger,
  };
}
