import { randomBytes } from "node:crypto";

/** The nats-server version we claim: clients gate features (headers, no_responders) on it. */
export const SERVER_VERSION = "2.10.0";

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** A random challenge for NKey authentication, base64url like nats-server's. */
export function generateNonce(): string {
  return randomBytes(16).toString("base64url");
}

/** A 56-character id in the shape of nats-server's (an "N" and base32), unique per listener. */
export function generateServerId(): string {
  const bytes = randomBytes(55);
  let id = "N";
  for (const b of bytes) id += BASE32[b & 31];
  return id;
}

export interface ServerInfo {
  serverId: string;
  serverName: string;
  host: string;
  port: number;
  maxPayload: number;
  authRequired: boolean;
  tlsRequired: boolean;
  tlsVerify: boolean;
  /**
   * More fields for INFO, named `mq9_…` so that they never clash with nats-server's; NATS clients
   * ignore fields they do not know.
   */
  extensions?: Record<string, unknown>;
}

/**
 * Builds INFO lines. The server part is serialised once; only client_id and client_ip vary per
 * connection, so they are appended to the pre-rendered JSON.
 */
export class InfoBuilder {
  private readonly prefix: string;

  constructor(info: ServerInfo) {
    const body: Record<string, unknown> = {
      ...info.extensions,
      server_id: info.serverId,
      server_name: info.serverName,
      version: SERVER_VERSION,
      proto: 1,
      go: "n/a",
      host: info.host,
      port: info.port,
      headers: true,
      max_payload: info.maxPayload,
    };
    if (info.authRequired) body.auth_required = true;
    if (info.tlsRequired) {
      body.tls_required = true;
      body.tls_available = true;
      if (info.tlsVerify) body.tls_verify = true;
    }
    const json = JSON.stringify(body);
    this.prefix = `INFO ${json.slice(0, -1)},`;
  }

  /** The INFO line for one connection; `nonce` is the challenge an NKey user signs. */
  line(clientId: number, clientIp: string, nonce?: string): Buffer {
    const challenge = nonce === undefined ? "" : `,"nonce":${JSON.stringify(nonce)}`;
    return Buffer.from(
      `${this.prefix}"client_id":${clientId},"client_ip":${JSON.stringify(clientIp)}${challenge}}\r\n`,
    );
  }
}
