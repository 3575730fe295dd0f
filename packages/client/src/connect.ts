import { Defaults, Mq9Error } from "@mq9/protocol";
import {
  type ConnectionOptions,
  credsAuthenticator,
  connect as natsConnect,
  nkeyAuthenticator,
  nkeys,
  type TlsOptions,
} from "nats";
import { Mq9Client } from "./client.js";
import type { ClientLogger } from "./logger.js";
import { fromNatsError } from "./nats-errors.js";
import { parseServerUrl } from "./server-url.js";

/** Where `connect()` goes when no URL is given: `mq9 serve`'s default. */
export const DEFAULT_SERVER = `mq9://127.0.0.1:${Defaults.port}`;

/** Options of `connect()`; credentials may also be given in the URL (`token@host`, `user:pass@host`). */
export interface ConnectOptions {
  token?: string;
  user?: string;
  password?: string;
  /**
   * The seed of an NKey user (the text `SU…`, as `nk -gen user` prints it, or its bytes):
   * the client signs the broker's nonce with it, and the broker knows the user by the public key.
   */
  nkeySeed?: string | Uint8Array;
  /**
   * The content of a NATS `.creds` file (a user JWT and its NKey seed), for a NATS server in
   * operator (JWT) mode: the client presents the JWT and signs the server's nonce with the seed.
   */
  creds?: string | Uint8Array;
  /**
   * TLS settings (CA, client certificate). `true` or an object forces TLS; `tls://`
   * and `mq9s://` URLs turn it on too, and a broker that requires TLS gets it anyway.
   */
  tls?: boolean | TlsOptions;
  /** Client name shown by the broker. */
  name?: string;
  /**
   * Prefix of this client's reply inboxes (default `_INBOX`). On a NATS cluster whose users may
   * subscribe only to their own prefix (`_INBOX_alice.>`), no one else can read their replies.
   */
  inboxPrefix?: string;
  /** How long a request waits for its reply (default 5 000; a FETCH adds its long-poll). */
  requestTimeoutMs?: number;
  /** How long the first connection attempt may take (default 5 000). */
  connectTimeoutMs?: number;
  /** Reconnect after a lost connection (default true). */
  reconnect?: boolean;
  /** Reconnect attempts per server; -1 = forever (default). */
  maxReconnectAttempts?: number;
  /** Pause between reconnect attempts (default 1 000). */
  reconnectDelayMs?: number;
  /** Where background failures without an `onError` go (default `stderrLogger`); see Mq9ClientOptions. */
  logger?: ClientLogger;
}

/**
 * Connects to an mq9 broker. `url` is `mq9://host[:port]` (default port 4332),
 * `mq9s://` (TLS), `nats://` or `tls://` (port 4222), a bare `host[:port]`, or a
 * list / comma-separated list of them for a cluster.
 */
export async function connect(
  url: string | readonly string[] = DEFAULT_SERVER,
  options: ConnectOptions = {},
): Promise<Mq9Client> {
  const urls = (typeof url === "string" ? url.split(",") : [...url]).map((u) => u.trim()).filter(Boolean);
  const servers = (urls.length > 0 ? urls : [DEFAULT_SERVER]).map(parseServerUrl);
  const fromUrl = servers.find((s) => s.token !== undefined || s.user !== undefined);
  const wantTls = options.tls === true || typeof options.tls === "object" || servers.some((s) => s.tls);
  const natsOptions: ConnectionOptions = {
    servers: servers.map((s) => s.hostPort),
    name: options.name ?? "mq9-client",
    timeout: options.connectTimeoutMs ?? 5_000,
    reconnect: options.reconnect ?? true,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    reconnectTimeWait: options.reconnectDelayMs ?? 1_000,
  };
  if (options.inboxPrefix !== undefined) natsOptions.inboxPrefix = options.inboxPrefix;
  const token = options.token ?? fromUrl?.token;
  const user = options.user ?? fromUrl?.user;
  if (token !== undefined) natsOptions.token = token;
  if (user !== undefined) {
    natsOptions.user = user;
    natsOptions.pass = options.password ?? fromUrl?.password ?? "";
  }
  if (options.nkeySeed !== undefined)
    natsOptions.authenticator = nkeyAuthenticator(userSeed(options.nkeySeed));
  if (options.creds !== undefined && options.nkeySeed !== undefined) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      "give either creds or nkeySeed, not both: a .creds file holds its own seed",
      {
        retryable: false,
      },
    );
  }
  if (options.creds !== undefined)
    natsOptions.authenticator = credsAuthenticator(
      typeof options.creds === "string" ? new TextEncoder().encode(options.creds) : options.creds,
    );
  if (wantTls) natsOptions.tls = typeof options.tls === "object" ? options.tls : {};
  try {
    const nc = await natsConnect(natsOptions);
    return new Mq9Client(nc, { requestTimeoutMs: options.requestTimeoutMs, logger: options.logger });
  } catch (err) {
    const where = `cannot connect to ${urls.join(", ") || DEFAULT_SERVER}`;
    const error = fromNatsError(err, where);
    if (error.code !== "TIMEOUT") throw error;
    // Something accepted the connection but never spoke NATS (an HTTP port, say), or nothing answered.
    throw new Mq9Error(
      "TIMEOUT",
      `${where}: no NATS INFO within ${natsOptions.timeout} ms; is the broker reachable, and is that its NATS port (not its HTTP port)?`,
      { cause: err },
    );
  }
}

/** The seed's bytes, checked up front: a bad seed would otherwise fail deep inside the handshake. */
function userSeed(seed: string | Uint8Array): Uint8Array {
  const text = (typeof seed === "string" ? seed : new TextDecoder().decode(seed)).trim();
  const bytes = new TextEncoder().encode(text);
  let valid = false;
  try {
    valid = text.startsWith("SU") && nkeys.fromSeed(bytes).getPublicKey().startsWith("U");
  } catch {
    valid = false;
  }
  if (!valid) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      "nkeySeed is not an NKey user seed: give the seed (the line starting with SU), not the public key",
      { retryable: false },
    );
  }
  return bytes;
}
