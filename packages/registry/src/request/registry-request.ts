import { Defaults, Errors } from "@mq9/protocol";
import { badRequest, type JsonObject, readJsonObject } from "./json-body.js";
import { bareMailbox, normalizeTag } from "./registration.js";

/** Which registrations an UNREGISTER or REPORT names: by mailbox, by name, or both. */
export interface AgentSelector {
  mailbox?: string;
  name?: string;
  /** Only registrations of this user (UNREGISTER and REPORT by a user who is not an admin). */
  owner?: string;
}

export interface ReportRequest extends AgentSelector {
  /** The REPORT body as received (JSON text), kept as the agent's status. */
  statusJson: string;
}

export interface DiscoverRequest {
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
};

/** DISCOVER never returns more than this many agents in one page. */
export const MAX_DISCOVER_LIMIT = 1000;

function optionalString(obj: JsonObject, field: string, command: string): string | undefined {
  const value = obj[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string")
    throw badRequest(Errors.invalidPayload(command, `'${field}' must be a string`));
  return value.trim() === "" ? undefined : value.trim();
}

function optionalUInt(obj: JsonObject, field: string, command: string): number | undefined {
  const value = obj[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw badRequest(
      Errors.invalidPayload(
        command,
        `'${field}' must be a non-negative integer, got ${JSON.stringify(value)}`,
      ),
    );
  }
  return value;
}

/** A boolean field; absent or null gives `absent`. */
function optionalBool(obj: JsonObject, field: string, command: string, absent = false): boolean {
  const value = obj[field];
  if (value === undefined || value === null) return absent;
  if (typeof value !== "boolean")
    throw badRequest(Errors.invalidPayload(command, `'${field}' must be true or false`));
  return value;
}

function readSelector(obj: JsonObject, command: string): AgentSelector {
  const mailbox = optionalString(obj, "mailbox", command);
  const name = optionalString(obj, "name", command);
  if (mailbox === undefined && name === undefined) {
    if (obj.name === "") throw badRequest(Errors.agentNameEmpty);
    throw badRequest(Errors.invalidPayload(command, "give the agent's 'mailbox' or 'name'"));
  }
  return { mailbox: mailbox === undefined ? undefined : bareMailbox(mailbox), name };
}

export function parseUnregister(body: Uint8Array): AgentSelector {
  return readSelector(readJsonObject(body, "AGENT.UNREGISTER").obj, "AGENT.UNREGISTER");
}

export function parseReport(body: Uint8Array): ReportRequest {
  const { obj, json } = readJsonObject(body, "AGENT.REPORT");
  return { ...readSelector(obj, "AGENT.REPORT"), statusJson: json };
}

function rejectUnknownFields(obj: JsonObject, command: string): void {
  for (const field of Object.keys(obj)) {
    if ((DISCOVER_FIELDS as readonly string[]).includes(field)) continue;
    const guess = DISCOVER_TYPOS[field.toLowerCase()];
    const hint = guess ? ` — did you mean '${guess}'?` : "";
    throw badRequest(
      Errors.invalidPayload(
        command,
        `unknown field '${field}'${hint} (DISCOVER reads ${DISCOVER_FIELDS.map((f) => `'${f}'`).join(", ")})`,
      ),
    );
  }
}

function readTags(obj: JsonObject, command: string): string[] | undefined {
  if (obj.tags === undefined || obj.tags === null) return undefined;
  const raw = typeof obj.tags === "string" ? [obj.tags] : obj.tags;
  if (!Array.isArray(raw) || raw.some((t) => typeof t !== "string")) {
    throw badRequest(Errors.invalidPayload(command, "'tags' must be an array of strings"));
  }
  const cleaned = (raw as string[]).map(normalizeTag).filter((t) => t !== "");
  return cleaned.length > 0 ? [...new Set(cleaned)] : undefined;
}

function readMinScore(obj: JsonObject, command: string): number | undefined {
  const value = obj.min_score;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw badRequest(
      Errors.invalidPayload(
        command,
        `'min_score' must be a number from 0 to 1, got ${JSON.stringify(value)}`,
      ),
    );
  }
  return value;
}

export function parseDiscover(body: Uint8Array): DiscoverRequest {
  const command = "AGENT.DISCOVER";
  const { obj } = readJsonObject(body, command, { emptyAsObject: true });
  rejectUnknownFields(obj, command);
  const limit = Math.min(optionalUInt(obj, "limit", command) || Defaults.discoverLimit, MAX_DISCOVER_LIMIT);
  const page = Math.max(1, optionalUInt(obj, "page", command) ?? 1);
  const offset = optionalUInt(obj, "offset", command);
  if (offset !== undefined && obj.page !== undefined && obj.page !== null && page !== 1) {
    throw badRequest(Errors.invalidPayload(command, "give 'offset' or 'page', not both"));
  }
  const mailbox = optionalString(obj, "mailbox", command);
  return {
    text: optionalString(obj, "text", command),
    semantic: optionalString(obj, "semantic", command),
    tags: readTags(obj, command),
    mailbox: mailbox === undefined ? undefined : bareMailbox(mailbox),
    name: optionalString(obj, "name", command),
    online: optionalBool(obj, "online", command),
    includeStatus: optionalBool(obj, "include_status", command),
    includeScore: optionalBool(obj, "include_score", command),
    includeAgentInfo: optionalBool(obj, "include_agent_info", command, true),
    minScore: readMinScore(obj, command),
    limit,
    offset: offset ?? (page - 1) * limit,
  };
}
