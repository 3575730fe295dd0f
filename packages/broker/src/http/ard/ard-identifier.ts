import { BrokerDefaults } from "../../broker-defaults.js";

/**
 * ARD identifiers (spec §4.2.1): `urn:air:<publisher>:<namespace>:<name>`, the publisher a
 * domain name. The broker names each registration `urn:air:<publisher>:agent:<mailbox>`; a
 * mailbox's characters (`a-z0-9.`) are all allowed in a URN segment, so no escaping is needed.
 */

/** A domain name as a URN's publisher segment: dot-separated labels of letters, digits and hyphens. */
const PUBLISHER =
  /^(?=.{1,253}$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;
/** The identifier rule as ARD's schema states it: a publisher, then one or more segments. */
const IDENTIFIER = /^urn:air:([a-zA-Z0-9.-]+)((?::[a-zA-Z0-9._-]+)+)$/;

/** The default publisher: a reserved `.localhost` name (RFC 2606), as ARD advises for local brokers. */
export const DEFAULT_ARD_PUBLISHER = BrokerDefaults.ardPublisher;

/** Why `publisher` cannot anchor identifiers, or undefined when it can. */
export function publisherProblem(publisher: string): string | undefined {
  if (PUBLISHER.test(publisher)) return undefined;
  return `'${publisher}' is not a domain name (labels of letters, digits and hyphens, separated by dots, e.g. agents.example.com)`;
}

/** What kind of resource an identifier names: its namespace segment. */
export type ArdKind = "agent" | "mcp" | "registry" | "catalog";

export function ardIdentifier(publisher: string, kind: ArdKind, name: string): string {
  return `urn:air:${publisher}:${kind}:${name}`;
}

/** An identifier's parts, or a sentence saying which rule it breaks. */
export function parseArdIdentifier(
  identifier: string,
): { publisher: string; segments: string[] } | { problem: string } {
  const match = IDENTIFIER.exec(identifier);
  if (!match) {
    return {
      problem: `'${identifier}' is not an ARD identifier: it must read urn:air:<publisher>:<namespace>:<name>, with a domain name as publisher and segments of letters, digits, '.', '_' and '-'`,
    };
  }
  return { publisher: match[1], segments: match[2].slice(1).split(":") };
}

/** The `<publisher>` of a URN identifier (the `publisher` filter key, §7.1), or undefined. */
export function publisherOf(identifier: string): string | undefined {
  const parsed = parseArdIdentifier(identifier);
  return "publisher" in parsed ? parsed.publisher : undefined;
}
