import { Defaults, Mq9Error } from "@mq9/protocol";

/** Where and how to reach one broker, as taken from a connection URL. */
export interface ServerAddress {
  /** `host:port` for the NATS client. */
  hostPort: string;
  tls: boolean;
  user?: string;
  password?: string;
  token?: string;
}

/** The NATS convention for nats:// and tls://; mq9's own schemes default to 4332. */
const NATS_PORT = 4222;

const schemes: Record<string, { port: number; tls: boolean }> = {
  nats: { port: NATS_PORT, tls: false },
  tls: { port: NATS_PORT, tls: true },
  mq9: { port: Defaults.port, tls: false },
  mq9s: { port: Defaults.port, tls: true },
};

/**
 * Reads `nats://`, `tls://`, `mq9://` or `mq9s://` URLs, or a bare `host[:port]`
 * (port 4332). `user:password@` or `token@` in the URL become credentials; a
 * mailbox path is ignored (the URL names the broker).
 */
export function parseServerUrl(url: string): ServerAddress {
  const match = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  const scheme = match ? match[1].toLowerCase() : "mq9";
  const known = schemes[scheme];
  if (!known) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      `unsupported server URL '${url}': use nats://, tls://, mq9:// or mq9s:// (or host:port)`,
      { retryable: false },
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(match ? `mq9${url.slice(scheme.length)}` : `mq9://${url}`);
  } catch {
    throw new Mq9Error("INVALID_REQUEST", `invalid server URL '${url}': expected scheme://host[:port]`, {
      retryable: false,
    });
  }
  if (parsed.hostname === "") {
    throw new Mq9Error("INVALID_REQUEST", `invalid server URL '${url}': the host is missing`, {
      retryable: false,
    });
  }
  const port = parsed.port === "" ? known.port : Number(parsed.port);
  const address: ServerAddress = { hostPort: `${parsed.hostname}:${port}`, tls: known.tls };
  if (parsed.username !== "") {
    const authority = (match ? url.slice(match[0].length) : url).split("/")[0];
    const userInfo = authority.slice(0, authority.lastIndexOf("@"));
    // `token@host` carries a token; `user:password@host` a user (the password may be empty).
    if (userInfo.includes(":")) {
      address.user = decodeURIComponent(parsed.username);
      address.password = decodeURIComponent(parsed.password);
    } else {
      address.token = decodeURIComponent(parsed.username);
    }
  }
  return address;
}
