import { Defaults, Mq9Error, mailAddressError } from "@mq9/protocol";

/** A parsed `mq9://host[:port][/mail_address]` or `mq9s://…` (TLS) URI. */
export interface Mq9Uri {
  scheme: "mq9" | "mq9s";
  host: string;
  /** The port given, else 4332. */
  port: number;
  /** The mailbox the URI names; undefined when it names only a broker. */
  mailAddress?: string;
  tls: boolean;
}

/** What `formatMq9Uri` needs: a host, and optionally a port, a mailbox and TLS. */
export interface Mq9UriParts {
  host: string;
  port?: number;
  mailAddress?: string;
  tls?: boolean;
}

const schemePattern = /^(mq9s?):\/\//i;

function invalid(uri: string, why: string): Mq9Error {
  return new Mq9Error(
    "INVALID_REQUEST",
    `invalid mq9 URI '${uri}': ${why}; expected mq9://host[:port]/mail_address or mq9s://…`,
  );
}

/** Parses an `mq9://` or `mq9s://` URI naming a broker and, optionally, a mailbox on it. */
export function parseMq9Uri(uri: string): Mq9Uri {
  const scheme = schemePattern.exec(uri)?.[1]?.toLowerCase() as "mq9" | "mq9s" | undefined;
  if (!scheme) throw invalid(uri, "the scheme must be mq9 or mq9s");
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalid(uri, "it is not a URL");
  }
  if (url.hostname === "") throw invalid(uri, "the host is missing");
  if (url.search !== "" || url.hash !== "") throw invalid(uri, "it must not have a query or a fragment");
  const port = url.port === "" ? Defaults.port : Number(url.port);
  const path = url.pathname.replace(/^\//, "");
  let mailAddress: string | undefined;
  if (path !== "") {
    const problem = mailAddressError(path);
    if (problem) throw invalid(uri, `bad mail_address '${path}' (${problem})`);
    mailAddress = path;
  }
  // WHATWG URL keeps IPv6 brackets and, for unknown schemes, the case of the host name.
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return { scheme, host, port, mailAddress, tls: scheme === "mq9s" };
}

/** Builds `mq9://host[:port]/mail_address` (or `mq9s://` with `tls`); the default port 4332 is left out. */
export function formatMq9Uri(parts: Mq9UriParts): string {
  if (parts.host === "") throw new Mq9Error("INVALID_REQUEST", "an mq9 URI needs a host");
  if (parts.mailAddress !== undefined) {
    const problem = mailAddressError(parts.mailAddress);
    if (problem) throw new Mq9Error("INVALID_NAME", `bad mail_address '${parts.mailAddress}': ${problem}`);
  }
  const host = parts.host.includes(":") ? `[${parts.host}]` : parts.host;
  const port = parts.port === undefined || parts.port === Defaults.port ? "" : `:${parts.port}`;
  return `${parts.tls ? "mq9s" : "mq9"}://${host}${port}/${parts.mailAddress ?? ""}`;
}

/**
 * The mail address a call targets: a bare address as is, or the mailbox part of an
 * mq9:// URI. The URI's host is not used: the connection already decides the broker.
 */
export function targetAddress(target: string): string {
  let address = target;
  if (target.includes("://")) {
    address = parseMq9Uri(target).mailAddress ?? "";
    if (address === "") throw invalid(target, "it names no mailbox");
  }
  // Wildcards or spaces would turn the request into an invalid or different NATS subject.
  if (address === "" || /[\s*>]/.test(address)) {
    throw new Mq9Error(
      "INVALID_NAME",
      `'${address}' is not a mail address: it must be non-empty, without spaces, '*' or '>'`,
    );
  }
  return address;
}
