import { ardIdentifier } from "./ard-identifier.js";

/** ARD's media types for what the broker lists (spec §3.3, §4.1). */
export const ArdTypes = {
  a2a: "application/a2a-agent-card+json",
  mcp: "application/mcp-server-card+json",
  catalog: "application/ai-catalog+json",
  registry: "application/ai-registry+json",
} as const;

/** One catalog entry (spec §4.2): exactly one of `url` and `data`. */
export interface CatalogEntry {
  identifier: string;
  displayName: string;
  type: string;
  url?: string;
  data?: Record<string, unknown>;
  description?: string;
  tags?: string[];
  capabilities?: string[];
  representativeQueries?: string[];
  version?: string;
  updatedAt?: string;
  metadata?: Record<string, unknown>;
}

/** Where the broker's catalog entries point. */
export interface EntryContext {
  publisher: string;
  /** The broker's HTTP origin as the client reached it, e.g. `http://127.0.0.1:8332`. */
  origin: string;
  /** The path of an agent's A2A card (the A2A gateway's); without it, or for a registration without one, the card is inline (`data`). */
  cardPath?: (mailbox: string) => string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const texts = (value: unknown): string[] =>
  Array.isArray(value)
    ? value.filter((item): item is string => typeof item === "string" && item.trim() !== "")
    : [];

/**
 * The card inside a DISCOVER entry, wherever its registration put it (as REGISTER reads it), and
 * whether it is an A2A card of its own (`agent_card`, `agentCard` or a JSON `payload` with a
 * name): only those the A2A gateway serves; a bare registration body is inline data.
 */
export function cardOf(entry: Json): { card: Json; a2a: boolean } {
  for (const candidate of [entry.agent_card, entry.agentCard]) {
    if (isObject(candidate)) return { card: candidate, a2a: typeof candidate.name === "string" };
  }
  if (typeof entry.payload === "string" && entry.payload.trimStart().startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(entry.payload);
      if (isObject(parsed)) return { card: parsed, a2a: typeof parsed.name === "string" };
    } catch {
      // prose that starts with a brace: the body is the card
    }
  }
  const { _status, _last_seen, _score, agent_info, ...card } = entry;
  return { card, a2a: false };
}

/** Representative queries (2–5, spec §4.2) from the skills' examples; none when fewer than two. */
function representativeQueries(skills: Json[]): string[] | undefined {
  const examples = [...new Set(skills.flatMap((skill) => texts(skill.examples)))].slice(0, 5);
  return examples.length >= 2 ? examples : undefined;
}

/**
 * The name segment of an MCP server's identifier: its URL's host and path, with every character a
 * URN segment may not hold made a '-' (`https://tools.example.com/mcp` → `tools.example.com-mcp`).
 */
export function serverSegment(url: string): string {
  const { host, pathname } = new URL(url);
  return `${host}${pathname}`
    .replace(/[^a-zA-Z0-9._-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .toLowerCase();
}

/**
 * An MCP server's registration as a catalog entry: its card inline (`data`) when it registered
 * one, else a reference to its URL; tools are its capabilities.
 */
function serverEntryOf(entry: Json, context: EntryContext): CatalogEntry {
  const url = String(entry.url);
  const card = isObject(entry.server_card) ? entry.server_card : undefined;
  const tools = Array.isArray(card?.tools) ? card.tools.filter(isObject) : [];
  const description = [entry.description, card?.description].find(
    (d): d is string => typeof d === "string" && d.trim() !== "",
  );
  const tags = [...new Set([...texts(entry.tags), ...texts(card?.tags)])];
  const capabilities = [
    ...new Set(tools.map((tool) => tool.name).filter((name): name is string => typeof name === "string")),
  ];
  const version = [entry.version, card?.version].find((v): v is string => typeof v === "string");
  const result: CatalogEntry = {
    identifier: ardIdentifier(context.publisher, "mcp", serverSegment(url)),
    displayName: typeof entry.name === "string" && entry.name !== "" ? entry.name : url,
    type: ArdTypes.mcp,
  };
  if (card) result.data = card;
  else result.url = url;
  if (description !== undefined) result.description = description;
  if (tags.length > 0) result.tags = tags;
  if (capabilities.length > 0) result.capabilities = capabilities;
  if (version !== undefined) result.version = version;
  if (typeof entry._last_seen === "number")
    result.updatedAt = new Date(entry._last_seen * 1000).toISOString();
  // mq9's own: where the server is, which `data` does not say.
  result.metadata = { "mq9.url": url };
  return result;
}

/** A registration (a DISCOVER entry with `_last_seen`) as an ARD catalog entry. */
export function catalogEntryOf(entry: Json, context: EntryContext): CatalogEntry {
  if (entry.kind === "mcp-server") return serverEntryOf(entry, context);
  const mailbox = String(entry.mailbox);
  const { card, a2a } = cardOf(entry);
  const skills = Array.isArray(card.skills) ? card.skills.filter(isObject) : [];
  const description =
    [entry.description, card.description, a2a ? undefined : entry.payload].find(
      (d): d is string => typeof d === "string" && d.trim() !== "",
    ) ?? undefined;
  const tags = [
    ...new Set([...texts(entry.tags), ...texts(card.tags), ...skills.flatMap((skill) => texts(skill.tags))]),
  ];
  const capabilities = [
    ...new Set(
      skills
        .map((skill) => skill.name ?? skill.id)
        .filter((name): name is string => typeof name === "string"),
    ),
  ];
  const version = [entry.version, card.version].find((v): v is string => typeof v === "string");
  const result: CatalogEntry = {
    identifier: ardIdentifier(context.publisher, "agent", mailbox),
    displayName: typeof entry.name === "string" && entry.name !== "" ? entry.name : mailbox,
    type: ArdTypes.a2a,
  };
  if (context.cardPath && a2a) result.url = `${context.origin}${context.cardPath(mailbox)}`;
  else result.data = card;
  if (description !== undefined) result.description = description;
  if (tags.length > 0) result.tags = tags;
  if (capabilities.length > 0) result.capabilities = capabilities;
  const queries = representativeQueries(skills);
  if (queries) result.representativeQueries = queries;
  if (version !== undefined) result.version = version;
  if (typeof entry._last_seen === "number")
    result.updatedAt = new Date(entry._last_seen * 1000).toISOString();
  // mq9's own: where to send, which no ARD field says.
  result.metadata = { "mq9.mailbox": mailbox };
  return result;
}
