/**
 * `@mq9/broker/ard-manifest` — reading and checking a publisher's ARD manifest (ARD §4), for
 * `mq9 agent import` and the broker's import route. A subpath of its own with no imports, so
 * the CLI reads manifests without loading the broker.
 *
 * @example
 * ```ts
 * import { readManifest } from "@mq9/broker/ard-manifest";
 *
 * const { cards } = await readManifest(manifestJson, "manifest.json", (url) => fetch(url).then((r) => r.json()));
 * ```
 */
/** A manifest that breaks ARD's rules, or a part of it that cannot be read: the message names the entry and the rule. */
export class ArdManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ArdManifestError";
  }
}

type Json = Record<string, unknown>;

/** ARD's media types the importer acts on. */
const A2A_TYPES = new Set(["application/a2a-agent-card+json", "application/agent-card+json"]);
/** MCP server cards: ARD's name, and the one before ADR-0008 renamed it. */
const MCP_TYPES = new Set(["application/mcp-server-card+json", "application/mcp-server+json"]);
const CATALOG_TYPE = "application/ai-catalog+json";
const REGISTRY_TYPES = new Set(["application/ai-registry+json", "application/ai-registry"]);

/** The identifier rule of ARD §4.2.1 (urn:air:<domain>:<namespace…>:<name>). */
const URN = /^urn:air:[a-zA-Z0-9.-]+(:[a-zA-Z0-9._-]+)+$/;
/** How deep nested catalogs are followed: a loop of catalogs naming each other ends here. */
const MAX_NESTING = 4;

/** A publisher's manifest paths: ARD's current name first, then v0.9's. */
export const MANIFEST_PATHS = [".well-known/ard.json", ".well-known/ai-catalog.json"];

/** An A2A card a manifest lists, with the entry that listed it. */
export interface ListedCard {
  identifier: string;
  card: Json;
}

/** An MCP server a manifest lists: registered by its URL (the entry's, or its inline card's). */
export interface ListedServer {
  identifier: string;
  name: string;
  url: string;
  description?: string;
  tags?: string[];
  /** The server card, when the entry carries it inline (`data`). */
  card?: Json;
}

/** What a manifest (with its nested catalogs) holds for the importer. */
export interface ManifestContents {
  cards: ListedCard[];
  servers: ListedServer[];
  /** Entries of other types (skills, data sets), and MCP cards with no URL, by identifier and type: not imported. */
  skipped: { identifier: string; type: string }[];
}

/** Where an inline MCP server card says the server is: its `url`, or its first remote's. */
function serverUrlOf(card: Json): string | undefined {
  const remotes = Array.isArray(card.remotes) ? card.remotes : [];
  const candidates = [card.url, ...remotes.map((remote) => (isObject(remote) ? remote.url : undefined))];
  return candidates.find((url): url is string => typeof url === "string" && /^https?:\/\//i.test(url));
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether a JSON document is an ARD manifest rather than an agent card. */
export function isManifest(value: unknown): boolean {
  return isObject(value) && Array.isArray(value.entries) && "specVersion" in value;
}

/**
 * GETs a JSON document within `timeoutMs`; an unreachable host, an HTTP error and a body that is
 * not JSON each fail with a message that names the URL and the reason.
 */
export async function fetchJsonDocument(url: string, timeoutMs: number): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: "application/json" },
    });
  } catch (err) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a timeout) is its cause.
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `${url} could not be reached (${cause?.code ?? cause?.message ?? (err as Error).message})`,
    );
  }
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  try {
    return await response.json();
  } catch (err) {
    throw new Error(`${url} did not return JSON: ${(err as Error).message}`);
  }
}

/** Why a manifest's entry breaks ARD's rules, or undefined. `where` names it for the error. */
function entryProblem(entry: unknown): string | undefined {
  if (!isObject(entry)) return "an entry must be a JSON object";
  for (const member of ["identifier", "displayName", "type"]) {
    if (typeof entry[member] !== "string" || entry[member] === "")
      return `'${member}' is required (a string)`;
  }
  if (!URN.test(String(entry.identifier))) {
    return `'identifier' ${JSON.stringify(entry.identifier)} must read urn:air:<publisher domain>:<namespace>:<name>`;
  }
  const hasUrl = "url" in entry;
  const hasData = "data" in entry;
  if (hasUrl === hasData) return "exactly one of 'url' and 'data' must be present (value or reference)";
  if (hasUrl && (typeof entry.url !== "string" || !/^https?:\/\//i.test(entry.url))) {
    return "'url' must be an http(s) URL";
  }
  if (hasData && !isObject(entry.data)) return "'data' must be a JSON object";
  for (const list of ["tags", "capabilities", "representativeQueries"]) {
    if (
      entry[list] !== undefined &&
      (!Array.isArray(entry[list]) || !(entry[list] as unknown[]).every((v) => typeof v === "string"))
    ) {
      return `'${list}' must be an array of strings`;
    }
  }
  return undefined;
}

export type FetchJson = (url: string) => Promise<unknown>;

/**
 * Validates a manifest and everything it nests, fetching referenced cards and catalogs: the
 * whole of it, before anything is registered. Throws a ArdManifestError naming the entry and the rule.
 */
export async function readManifest(
  manifest: unknown,
  from: string,
  fetchJson: FetchJson,
): Promise<ManifestContents> {
  const contents: ManifestContents = { cards: [], servers: [], skipped: [] };
  const seen = new Set<string>();
  const walk = async (value: unknown, where: string, depth: number): Promise<void> => {
    if (!isObject(value))
      throw new ArdManifestError(`${where} is not an ARD manifest: it must be a JSON object`);
    if (typeof value.specVersion !== "string")
      throw new ArdManifestError(`${where}: 'specVersion' is required (a string)`);
    if (!Array.isArray(value.entries))
      throw new ArdManifestError(`${where}: 'entries' is required (an array)`);
    for (const [index, entry] of value.entries.entries()) {
      const name = isObject(entry) && typeof entry.identifier === "string" ? ` (${entry.identifier})` : "";
      const label = `${where}: entry ${index}${name}`;
      const problem = entryProblem(entry);
      if (problem) throw new ArdManifestError(`${label}: ${problem}`);
      const { identifier, type } = entry as { identifier: string; type: string };
      if (seen.has(identifier)) throw new ArdManifestError(`${label}: the identifier is listed twice`);
      seen.add(identifier);
      const body = async (): Promise<unknown> => {
        const { url, data } = entry as { url?: string; data?: unknown };
        if (data !== undefined) return data;
        try {
          return await fetchJson(url!);
        } catch (err) {
          throw new ArdManifestError(`${label}: its url could not be read: ${(err as Error).message}`);
        }
      };
      if (A2A_TYPES.has(type)) {
        const card = await body();
        if (!isObject(card) || typeof card.name !== "string") {
          throw new ArdManifestError(
            `${label}: its card is not an A2A agent card (a JSON object with a name)`,
          );
        }
        contents.cards.push({ identifier, card });
      } else if (MCP_TYPES.has(type)) {
        // Registered by URL: a referenced card is not fetched (ARD's url may be the endpoint itself).
        const listed = entry as Json & { displayName: string; url?: string; data?: Json };
        const url = listed.url ?? serverUrlOf(listed.data!);
        if (url === undefined) {
          contents.skipped.push({ identifier, type });
          continue;
        }
        contents.servers.push({
          identifier,
          name: listed.displayName,
          url,
          ...(typeof listed.description === "string" ? { description: listed.description } : {}),
          ...(Array.isArray(listed.tags) ? { tags: listed.tags as string[] } : {}),
          ...(listed.data !== undefined ? { card: listed.data } : {}),
        });
      } else if (type === CATALOG_TYPE) {
        if (depth >= MAX_NESTING)
          throw new ArdManifestError(`${label}: catalogs nest deeper than ${MAX_NESTING} levels`);
        await walk(await body(), `${label} → ${(entry as Json).url ?? "its data"}`, depth + 1);
      } else if (!REGISTRY_TYPES.has(type)) {
        contents.skipped.push({ identifier, type });
      }
    }
  };
  await walk(manifest, from, 0);
  return contents;
}

/** The REGISTER body of an MCP server a manifest lists. */
export function serverRegistration(server: ListedServer, ttl?: number): Json {
  return {
    kind: "mcp-server",
    url: server.url,
    name: server.name,
    ...(server.description !== undefined ? { description: server.description } : {}),
    ...(server.tags !== undefined ? { tags: server.tags } : {}),
    ...(server.card !== undefined ? { server_card: server.card } : {}),
    ...(ttl !== undefined ? { ttl } : {}),
  };
}

/** A card's mailbox from a `--mailbox` template: `{name}` is the card's name in mailbox form. */
export function mailboxFor(template: string, name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ".")
    .replace(/^\.+|\.+$/g, "");
  return template.replaceAll("{name}", slug);
}
