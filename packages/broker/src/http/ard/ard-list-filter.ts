import { type ArdFilter, matchesFilter, valuesAt } from "./ard-filter.js";

type Json = Record<string, unknown>;

/** GET /agents' filter (spec Appendix A) as a test of one entry. */
export type ListFilter = (entry: Json) => boolean;

/** Appendix A's fields, and the field of the entry each one reads. */
const LIST_FIELDS: Record<string, string> = { type: "type", publisherId: "publisher" };

/** A clause: `field = value`, `field > value` (timestamps); the value bare or in single or double quotes. */
const CLAUSE = /^\s*([A-Za-z_][\w.]*)\s*(=|:|>=|>)\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s*$/;

/**
 * Reads an Appendix A filter: clauses joined by `AND`, each `field = a,b` (OR within it, AND
 * across clauses). `displayName` matches case-insensitively as a substring; `updatedAfter`
 * takes an ISO 8601 instant; any other field is a dot-path into the entry, as in a search filter.
 * Throws an Error whose message says which clause is wrong and why.
 */
export function parseListFilter(text: string): ListFilter {
  const tests: ListFilter[] = [];
  for (const clause of text.split(/ +AND +/)) {
    if (clause.trim() === "") continue;
    const match = CLAUSE.exec(clause);
    if (!match) {
      throw new Error(
        `the filter clause '${clause.trim()}' cannot be read: write field = value (e.g. type = 'application/a2a-agent-card+json'), clauses joined by AND`,
      );
    }
    const [, field, op, single, double, bare] = match;
    const value = single ?? double ?? bare ?? "";
    if (field === "updatedAfter" || field === "createdAfter") {
      if (field === "createdAfter") {
        throw new Error(
          "the filter field createdAfter is not supported: the broker keeps when a registration was last heard from (updatedAfter), not when it was first made",
        );
      }
      const after = Date.parse(value);
      if (Number.isNaN(after)) throw new Error(`updatedAfter needs an ISO 8601 instant, got '${value}'`);
      tests.push((entry) => typeof entry.updatedAt === "string" && Date.parse(entry.updatedAt) > after);
      continue;
    }
    if (op === ">" || op === ">=") {
      throw new Error(
        `the filter clause '${clause.trim()}' compares with ${op}: only updatedAfter is an ordering; use = for ${field}`,
      );
    }
    if (field === "displayName") {
      const wanted = value.normalize("NFKC").toLowerCase();
      tests.push((entry) =>
        String(entry.displayName ?? "")
          .normalize("NFKC")
          .toLowerCase()
          .includes(wanted),
      );
      continue;
    }
    const filter: ArdFilter = {
      [LIST_FIELDS[field] ?? field]: value
        .split(",")
        .map((v) => v.trim())
        .filter(Boolean),
    };
    tests.push((entry) => matchesFilter(entry, filter));
  }
  return (entry) => tests.every((test) => test(entry));
}

/** Sorts entries by `orderBy` (`displayName`, `updatedAt DESC`, …); throws on a field it cannot order by. */
export function orderEntries<T extends Json>(entries: T[], orderBy: string | undefined): T[] {
  if (orderBy === undefined || orderBy.trim() === "") return entries;
  const match = /^\s*(displayName|identifier|updatedAt|version|type)(?:\s+(ASC|DESC|asc|desc))?\s*$/.exec(
    orderBy,
  );
  if (!match) {
    throw new Error(
      `orderBy '${orderBy}' cannot be used: order by displayName, identifier, updatedAt, version or type, optionally followed by ASC or DESC`,
    );
  }
  const field = match[1];
  const sign = match[2]?.toUpperCase() === "DESC" ? -1 : 1;
  const key = (entry: T) => valuesAt(entry, field)[0] ?? "";
  return [...entries].sort((a, b) => sign * (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
