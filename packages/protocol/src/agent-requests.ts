import {
  bareMailbox,
  mcpServerKey,
  normalizeTag,
  RESOURCE_KINDS,
  type ResourceKind,
  readServerUrl,
} from "./agent-registration.js";
import { suggestion } from "./closest-name.js";
import { Defaults } from "./defaults.js";
import { Errors } from "./errors.js";
import { BodyError, type JsonObject, type Parsed, parseWith, readJsonObject } from "./validate.js";

/** Which registrations an UNREGISTER or REPORT names: by mailbox, by name, or both. */
export interface AgentSelector {
  mailbox?: string;
  name?: string;
  /** Only registrations of this user (UNREGISTER and REPORT by a user who is not an admin). */
  owner?: string;
}

export interface ParsedReportRequest extends AgentSelector {
  /** The REPORT body as received (JSON text), kept as the agent's status. */
  statusJson: string;
}

export interface ParsedDiscoverRequest {
  text?: string;
  semantic?: string;
  tags?: string[];
  /** Direct lookup: the registration of this mailbox (bare form). */
  mailbox?: string;
  /** Direct lookup: the registrations of this name (names need not be unique). */
  name?: string;
  online: boolean;
  includeStatus: boolean;
  /** Adds `_score` (calibrated relevance, BM25 for full text; higher is better) to ranked entries. */
  includeScore: boolean;
  /** Adds the derived `agent_info` where the body has none (false only when asked). */
  includeAgentInfo: boolean;
  /** Semantic and hybrid answers keep only agents scoring at least this (0..1, calibrated). */
  minScore?: number;
  limit: number;
  /** Agents skipped before this page: `offset` when given, else (page - 1) * limit. */
  offset: number;
  /** The kinds of registration answered: agents only unless `kind` asks for more. */
  kinds: ResourceKind[];
}

/** Every field DISCOVER reads; anything else is a typo the caller should hear about. */
const DISCOVER_FIELDS = [
  "text",
  "semantic",
  "tags",
  "mailbox",
  "name",
  "online",
  "include_status",
  "include_score",
  "include_agent_info",
  "min_score",
  "limit",
  "page",
  "offset",
  "kind",
] as const;

/** Likely meanings of misspelled DISCOVER fields, for the error text. */
const DISCOVER_TYPOS: Record<string, string> = {
  tag: "tags",
  query: "text' or 'semantic",
  q: "text' or 'semantic",
  search: "text' or 'semantic",
  semantics: "semantic",
  filter: "tags",
  filters: "tags",
  agent: "name",
  agent_name: "name",
  mail_address: "mailbox",
  address: "mailbox",
  size: "limit",
  page_size: "limit",
  skip: "offset",
  minscore: "min_score",
  threshold: "min_score",
  score: "include_score",
  status: "include_status",
  type: "kind",
  kinds: "kind",
};

/** DISCOVER never returns more than this many agents in one page. */
export const MAX_DISCOVER_LIMIT = 1000;

function optionalString(obj: JsonObject, field: string): string | undefined {
  const value = obj[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new BodyError(`'${field}' must be a string`);
  return value.trim() === "" ? undefined : value.trim();
}

function optionalUInt(obj: JsonObject, field: string): number | undefined {
  const value = obj[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new BodyError(`'${field}' must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A boolean field; absent or null gives `absent`. */
function optionalBool(obj: JsonObject, field: string, absent = false): boolean {
  const value = obj[field];
  if (value === undefined || value === null) return absent;
  if (typeof value !== "boolean") throw new BodyError(`'${field}' must be true or false`);
  return value;
}

function readSelector(obj: JsonObject): AgentSelector {
  const mailbox = optionalString(obj, "mailbox");
  const name = optionalString(obj, "name");
  if (obj.url !== undefined && obj.url !== null) {
    // An MCP server by its URL: the key it is stored under.
    if (mailbox !== undefined)
      throw new BodyError("give 'mailbox' (an agent) or 'url' (an MCP server), not both");
    return { mailbox: mcpServerKey(readServerUrl(obj.url)), name };
  }
  if (mailbox === undefined && name === undefined) {
    if (obj.name === "") throw new BodyError(Errors.agentNameEmpty, true);
    throw new BodyError("give the agent's 'mailbox' or 'name'");
  }
  return { mailbox: mailbox === undefined ? undefined : bareMailbox(mailbox), name };
}

/** Reads an AGENT.* body as JSON; refuses bodies that are not UTF-8 (they would be stored). */
function readBody(body: Uint8Array, emptyAsObject = false): { obj: JsonObject; text: string } {
  return readJsonObject(body, { strictUtf8: true, emptyAsObject });
}

/** AGENT.UNREGISTER: which registrations to remove. */
export function parseUnregisterRequest(body: Uint8Array): Parsed<AgentSelector> {
  return parseWith(
    () => readSelector(readBody(body).obj),
    (reason) => Errors.invalidPayload("AGENT.UNREGISTER", reason),
  );
}

/** AGENT.REPORT: which registrations, and the body kept as their status. */
export function parseReportRequest(body: Uint8Array): Parsed<ParsedReportRequest> {
  return parseWith(
    () => {
      const { obj, text } = readBody(body);
      return { ...readSelector(obj), statusJson: text };
    },
    (reason) => Errors.invalidPayload("AGENT.REPORT", reason),
  );
}

function rejectUnknownFields(obj: JsonObject): void {
  for (const field of Object.keys(obj)) {
    if ((DISCOVER_FIELDS as readonly string[]).includes(field)) continue;
    const guess = DISCOVER_TYPOS[field.toLowerCase()];
    throw new BodyError(
      `unknown field '${field}'${suggestion(guess)} (DISCOVER reads ${DISCOVER_FIELDS.map((f) => `'${f}'`).join(", ")})`,
    );
  }
}

function readTags(obj: JsonObject): string[] | undefined {
  if (obj.tags === undefined || obj.tags === null) return undefined;
  const raw = typeof obj.tags === "string" ? [obj.tags] : obj.tags;
  if (!Array.isArray(raw) || raw.some((t) => typeof t !== "string")) {
    throw new BodyError("'tags' must be an array of strings");
  }
  const cleaned = (raw as string[]).map(normalizeTag).filter((t) => t !== "");
  return cleaned.length > 0 ? [...new Set(cleaned)] : undefined;
}

/** DISCOVER's `kind`: one kind or an array of them; agents only when left out. */
function readKinds(obj: JsonObject): ResourceKind[] {
  const value = obj.kind;
  if (value === undefined || value === null) return ["agent"];
  const raw = Array.isArray(value) ? value : [value];
  const known = RESOURCE_KINDS as readonly unknown[];
  const bad = raw.find((kind) => !known.includes(kind));
  if (bad !== undefined || raw.length === 0) {
    throw new BodyError(
      `'kind' must be ${RESOURCE_KINDS.map((k) => `"${k}"`).join(" or ")}, or an array of them; got ${JSON.stringify(bad ?? value)}`,
    );
  }
  return [...new Set(raw as ResourceKind[])];
}

function readMinScore(obj: JsonObject): number | undefined {
  const value = obj.min_score;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new BodyError(`'min_score' must be a number from 0 to 1, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** AGENT.DISCOVER: the query, its filters and the page. */
export function parseDiscoverRequest(body: Uint8Array): Parsed<ParsedDiscoverRequest> {
  return parseWith(
    () => readDiscover(readBody(body, true).obj),
    (reason) => Errors.invalidPayload("AGENT.DISCOVER", reason),
  );
}

function readDiscover(obj: JsonObject): ParsedDiscoverRequest {
  rejectUnknownFields(obj);
  const limit = Math.min(optionalUInt(obj, "limit") || Defaults.discoverLimit, MAX_DISCOVER_LIMIT);
  const page = Math.max(1, optionalUInt(obj, "page") ?? 1);
  const offset = optionalUInt(obj, "offset");
  if (offset !== undefined && obj.page !== undefined && obj.page !== null && page !== 1) {
    throw new BodyError("give 'offset' or 'page', not both");
  }
  const mailbox = optionalString(obj, "mailbox");
  return {
    text: optionalString(obj, "text"),
    semantic: optionalString(obj, "semantic"),
    tags: readTags(obj),
    mailbox: mailbox === undefined ? undefined : bareMailbox(mailbox),
    name: optionalString(obj, "name"),
    online: optionalBool(obj, "online"),
    includeStatus: optionalBool(obj, "include_status"),
    includeScore: optionalBool(obj, "include_score"),
    includeAgentInfo: optionalBool(obj, "include_agent_info", true),
    minScore: readMinScore(obj),
    limit,
    offset: offset ?? (page - 1) * limit,
    kinds: readKinds(obj),
  };
}
