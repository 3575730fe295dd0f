import { isIP } from "node:net";

/** Host names a loopback-bound server answers to by default. */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/** True for an address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || (isIP(bare) === 4 && bare.startsWith("127."));
}

/** The host name of a Host header or an Origin URL, lowercased, without port or IPv6 brackets. */
function hostnameOf(value: string, isOrigin: boolean): string | undefined {
  try {
    const url = new URL(isOrigin ? value : `http://${value}`);
    return url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return undefined;
  }
}

export interface HostGuardOptions {
  /** The address the HTTP server is bound to. */
  boundHost: string;
  /**
   * Host names (no port) that requests may name in their Host header; `*` turns the check off.
   * Default: the loopback names when bound to a loopback address, no check otherwise.
   */
  allowedHosts?: readonly string[];
  /** Host names that a browser's Origin header may name. Default: the allowed hosts. */
  allowedOrigins?: readonly string[];
}

/**
 * DNS-rebinding protection. A web page on attacker.example can make the browser send requests to
 * 127.0.0.1 by pointing its own name there; those requests carry `Host: attacker.example` and
 * `Origin: http://attacker.example`. Refusing hosts and origins outside an allow list keeps such
 * pages from driving the MCP tools, the A2A gateway or the API (the MCP spec requires the Origin
 * check). Requests without an Origin (SDKs, curl) only need an allowed Host.
 */
export class HostGuard {
  private readonly hosts: Set<string> | undefined;
  private readonly origins: Set<string> | undefined;

  constructor(options: HostGuardOptions) {
    const lower = (names: readonly string[]) =>
      new Set(names.map((n) => n.replace(/^\[|\]$/g, "").toLowerCase()));
    const defaults = isLoopbackHost(options.boundHost) ? [...LOOPBACK_NAMES, options.boundHost] : undefined;
    const hosts = options.allowedHosts ?? defaults;
    this.hosts = hosts === undefined || hosts.includes("*") ? undefined : lower(hosts);
    const origins = options.allowedOrigins ?? hosts;
    this.origins = origins === undefined || origins.includes("*") ? undefined : lower(origins);
  }

  get enabled(): boolean {
    return this.hosts !== undefined || this.origins !== undefined;
  }

  /** Why the request must be refused, or undefined when it may go on. */
  refusal(host: string | undefined, origin: string | undefined): string | undefined {
    if (this.hosts !== undefined) {
      const name = host === undefined ? undefined : hostnameOf(host, false);
      if (name === undefined || !this.hosts.has(name)) {
        return `forbidden: Host '${host ?? ""}' is not an allowed host of this mq9 server (DNS-rebinding protection); add its name to http.allowedHosts (--http-allowed-hosts) to allow it`;
      }
    }
    if (this.origins !== undefined && origin !== undefined) {
      const name = origin === "null" ? undefined : hostnameOf(origin, true);
      if (name === undefined || !this.origins.has(name)) {
        return `forbidden: Origin '${origin}' is not an allowed origin of this mq9 server (DNS-rebinding protection); add its host name to http.allowedOrigins (--http-allowed-origins) to allow it`;
      }
    }
    return undefined;
  }
}
