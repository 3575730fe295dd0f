import { publisherOf } from "./ard-identifier.js";

type Json = Record<string, unknown>;

/** A filter of §7.1: each key a dot-path into the entry, each value the alternatives it may take. */
export type ArdFilter = Record<string, string[]>;

/** How values compare: NFKC and case-folded, as registry tags are. */
function fold(value: string): string {
  return value.normalize("NFKC").trim().toLowerCase();
}

function collect(value: unknown, parts: string[], out: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) collect(item, parts, out);
    return;
  }
  if (parts.length === 0) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
      out.push(String(value));
    return;
  }
  if (typeof value !== "object" || value === null) return;
  // Longest key first, so that a key with dots of its own (`metadata."mq9.mailbox"`) is found whole.
  for (let end = parts.length; end >= 1; end--) {
    const key = parts.slice(0, end).join(".");
    if (Object.hasOwn(value, key)) {
      collect((value as Json)[key], parts.slice(end), out);
      return;
    }
  }
}

/**
 * The scalar values at a dot-path (`trustManifest.attestations.type`): arrays on the way are
 * walked element by element. `publisher` is the identifier's publisher segment (§7.1).
 */
export function valuesAt(entry: Json, path: string): string[] {
  if (path === "publisher") {
    const publisher = typeof entry.identifier === "string" ? publisherOf(entry.identifier) : undefined;
    return publisher === undefined ? [] : [publisher];
  }
  const out: string[] = [];
  collect(entry, path.split("."), out);
  return out;
}

/** OR within a key, AND across keys (§7.1); an array at the path matches if any element does. */
export function matchesFilter(entry: Json, filter: ArdFilter | undefined): boolean {
  if (!filter) return true;
  for (const [path, wanted] of Object.entries(filter)) {
    const have = new Set(valuesAt(entry, path).map(fold));
    if (!wanted.some((value) => have.has(fold(value)))) return false;
  }
  return true;
}
