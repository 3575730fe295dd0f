import { DEFAULT_SERVER, parseServerUrl } from "@mq9/client";
import { Defaults } from "@mq9/protocol";
import { UsageError } from "./client-command.js";
import { readServerInfo } from "./server-info.js";

/** Where a value came from, as commander reports it (`cli`, `env`, `default`, …). */
export type ValueSource = string | undefined;

/** The flags that say where the broker's HTTP server is. */
export interface HttpAddressFlags {
  server: string;
  http?: string;
  /** The older name of --http (and MQ9_API of MQ9_HTTP). */
  api?: string;
  token?: string;
  user?: string;
  password?: string;
}

export interface HttpAddress {
  /** The base URL of the HTTP server, e.g. http://127.0.0.1:8332. */
  url: string;
  /** How it was found, for --verbose. */
  how: string;
  /** Set when the port is a guess (the server names none): what to tell if nothing answers there. */
  guess?: string;
  /** Credentials written in the --server URL (`token@host`), for a broker that guards its HTTP routes. */
  credentials?: { token?: string; user?: string; password?: string };
}

/** How long the broker has to send its INFO when the HTTP port is asked of it. */
const INFO_TIMEOUT_MS = 5_000;

function named(flag: string, env: string, source: ValueSource): string {
  if (source === "env") return env;
  if (source === "cli") return flag;
  if (source?.startsWith("context ")) return source;
  return "the default";
}

/** How strongly a value was given: a flag, then the environment, then a context, then nothing. */
function level(source: ValueSource): number {
  if (source === "cli") return 3;
  if (source === "env") return 2;
  return source?.startsWith("context ") ? 1 : 0;
}

function explicitUrl(raw: string, said: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${said} '${raw}' is not a URL like http://127.0.0.1:${Defaults.httpPort}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`${said} '${raw}' must be an http:// or https:// URL`);
  }
  return url.toString().replace(/\/$/, "");
}

/**
 * The broker's HTTP address. A flag on the command line beats the environment, which beats a
 * context, and at the same level --http beats --server: so `--server X` on the command line is
 * not overridden by an MQ9_HTTP left in the environment. From --server, the port is the one the broker advertises in
 * its INFO (`mq9_http_port`), on the host --server names.
 */
export async function resolveHttpAddress(
  flags: HttpAddressFlags,
  sources: { server?: ValueSource; http?: ValueSource; api?: ValueSource },
): Promise<HttpAddress> {
  // An empty value (MQ9_HTTP= in a script) counts as not given.
  const http = flags.http
    ? { raw: flags.http, said: named("--http", "MQ9_HTTP", sources.http), source: sources.http }
    : flags.api
      ? { raw: flags.api, said: named("--api", "MQ9_API", sources.api), source: sources.api }
      : undefined;
  if (http !== undefined && level(http.source) >= level(sources.server)) {
    return { url: explicitUrl(http.raw, http.said), how: `given by ${http.said}` };
  }
  const server = flags.server || DEFAULT_SERVER;
  const serverSaid = named("--server", "MQ9_SERVER", sources.server);
  let address: ReturnType<typeof parseServerUrl>;
  try {
    address = parseServerUrl(server.split(",")[0].trim());
  } catch (err) {
    throw new UsageError(`${serverSaid}: ${(err as Error).message}`);
  }
  const split = address.hostPort.lastIndexOf(":");
  const host = address.hostPort.slice(0, split).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.hostPort.slice(split + 1));
  const info = await readServerInfo(host, port, INFO_TIMEOUT_MS);
  const advertised = info.mq9_http_port;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  const credentials =
    address.token !== undefined || address.user !== undefined
      ? { token: address.token, user: address.user, password: address.password }
      : undefined;
  if (typeof advertised === "number" && Number.isInteger(advertised) && advertised > 0) {
    return {
      url: `http://${urlHost}:${advertised}`,
      how: `port ${advertised} from the INFO of the broker at ${server} (${serverSaid})`,
      credentials,
    };
  }
  return {
    url: `http://${urlHost}:${Defaults.httpPort}`,
    how: `the broker at ${server} (${serverSaid}) names no HTTP port; trying the default ${Defaults.httpPort}`,
    guess: `the server at ${server} names no HTTP port in its INFO, so the default ${Defaults.httpPort} was tried; a cluster's nats-servers never name one: give a node's HTTP server with --http (or MQ9_HTTP)`,
    credentials,
  };
}
