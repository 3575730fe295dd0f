import { Errors } from "./errors.js";
import { BodyError, type JsonObject, type Parsed, parseWith, readJsonObject } from "./validate.js";

/** One skill of an agent as the indexes see it (A2A `AgentSkill`, v1.0 and v0.3 alike). */
export interface SkillText {
  id?: string;
  name: string;
  description: string;
  tags: string[];
  examples: string[];
}

/**
 * What a registration describes (REGISTER's `kind`): an agent reached by its mailbox (the
 * default), or an MCP server reached by its URL, which has no mailbox.
 */
export type ResourceKind = "agent" | "mcp-server";

/** Every resource kind, the default first. */
export const RESOURCE_KINDS: readonly ResourceKind[] = ["agent", "mcp-server"];

/** Fields that only an agent's registration may carry: an MCP server has no mailbox and no A2A card. */
const AGENT_ONLY_FIELDS = ["mailbox", "agent_card", "agentCard", "payload", "skills"] as const;

/**
 * The registry's key of an MCP server: its URL behind a prefix no mail address can have (mail
 * addresses hold no ':'), so the two kinds never share a key.
 */
export function mcpServerKey(url: string): string {
  return `mcp-server:${url}`;
}

/** What a registry derives from a REGISTER body; the body itself is kept verbatim. */
export interface ParsedRegistration {
  /** The key: the bare mail address (a `mq9://host/` prefix stripped), or an MCP server's mcpServerKey. */
  mailbox: string;
  kind: ResourceKind;
  /** An MCP server's URL (normalised); undefined for agents. */
  url?: string;
  name: string;
  /** Prose about the agent: description, card description and prose payload, deduplicated. */
  description: string;
  version?: string;
  /** Lowercased union of the agent's own tags and its skills' tags. */
  tags: string[];
  skills: SkillText[];
  /** Seconds; undefined when the body carries none (the broker default applies). */
  ttlS?: number;
  /** The body exactly as received. */
  bodyJson: string;
  /** RobustMQ's string view of the agent (payload, else the card, else the body). */
  agentInfo: string;
  /** Whether the body already has a usable top-level `name` (else DISCOVER gives it the derived one). */
  hasOwnName: boolean;
}

export interface RegistrationLimits {
  maxCardBytes: number;
  maxSkills: number;
}

export const DEFAULT_REGISTRATION_LIMITS: RegistrationLimits = {
  maxCardBytes: 256 * 1024,
  maxSkills: 256,
};

const COMMAND = "AGENT.REGISTER";
const MAX_MAILBOX_LENGTH = 512;
const uriPrefix = /^mq9s?:\/\/[^/]*\/(.+)$/;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

function strings(value: unknown): string[] {
  if (typeof value === "string") return text(value) ? [value.trim()] : [];
  if (!Array.isArray(value)) return [];
  return value.map(text).filter((s): s is string => s !== undefined);
}

/**
 * A tag as filters compare it: Unicode-normalised (NFKC), trimmed and lowercased, so `Finance`,
 * ` finance` and `ＦＩＮＡＮＣＥ` are one tag; anything else must match exactly (no substrings).
 */
export function normalizeTag(tag: string): string {
  return tag.normalize("NFKC").trim().toLowerCase();
}

/** `mq9://host[:port]/addr` and `mq9s://…` name the same agent as the bare `addr`. */
export function bareMailbox(mailbox: string): string {
  const match = uriPrefix.exec(mailbox.trim());
  return match ? match[1] : mailbox.trim();
}

/**
 * The A2A card inside a registration, wherever the caller put it: `agent_card`
 * (Python/Java A2A SDKs), `agentCard`, a JSON object serialised into `payload`
 * (RobustMQ's MCP form), or the body itself (a card with `mailbox` added).
 */
function findCard(body: JsonObject): { card: JsonObject; fromPayload: boolean } {
  if (isObject(body.agent_card)) return { card: body.agent_card, fromPayload: false };
  if (isObject(body.agentCard)) return { card: body.agentCard, fromPayload: false };
  if (typeof body.payload === "string" && body.payload.trimStart().startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(body.payload);
      if (isObject(parsed)) return { card: parsed, fromPayload: true };
    } catch {
      // prose that happens to start with a brace
    }
  }
  return { card: body, fromPayload: false };
}

function readSkill(value: unknown): SkillText | undefined {
  if (typeof value === "string") {
    const name = text(value);
    return name ? { name, description: "", tags: [], examples: [] } : undefined;
  }
  if (!isObject(value)) return undefined;
  const skill: SkillText = {
    id: text(value.id),
    name: text(value.name) ?? text(value.id) ?? "",
    description: text(value.description) ?? "",
    tags: strings(value.tags),
    examples: strings(value.examples),
  };
  return skill.name || skill.description || skill.tags.length || skill.examples.length ? skill : undefined;
}

function fail(reason: string): never {
  throw new BodyError(reason);
}

/** Parses and checks a REGISTER body (AGENT.REGISTER); the error is the reply's error text. */
export function parseRegisterRequest(
  body: Uint8Array,
  limits: RegistrationLimits = DEFAULT_REGISTRATION_LIMITS,
): Parsed<ParsedRegistration> {
  return parseWith(
    () => readRegistration(body, limits),
    (reason) => Errors.invalidPayload(COMMAND, reason),
  );
}

function readRegistration(body: Uint8Array, limits: RegistrationLimits): ParsedRegistration {
  if (body.length > limits.maxCardBytes) {
    fail(
      `the registration is ${body.length} bytes; the limit is ${limits.maxCardBytes} bytes (registry.maxCardBytes) — trim examples or long descriptions`,
    );
  }
  const { obj, text: json } = readJsonObject(body, {
    strictUtf8: true,
    emptyError: new BodyError(Errors.emptyRegistration, true),
  });
  const kind = readKind(obj.kind);
  if (kind === "mcp-server") return readMcpServer(obj, json, limits);

  if (obj.mailbox === undefined || obj.mailbox === null) {
    fail("missing field 'mailbox': give the mail_address where other agents can send to this agent");
  }
  if (typeof obj.mailbox !== "string") fail("'mailbox' must be a string (the agent's mail_address)");
  const mailbox = bareMailbox(obj.mailbox);
  if (mailbox === "") fail("'mailbox' must not be empty");
  if (mailbox.length > MAX_MAILBOX_LENGTH) fail(`'mailbox' must be at most ${MAX_MAILBOX_LENGTH} characters`);

  let ttlS: number | undefined;
  if (obj.ttl !== undefined && obj.ttl !== null) {
    if (typeof obj.ttl !== "number" || !Number.isSafeInteger(obj.ttl) || obj.ttl < 0) {
      fail(`'ttl' must be a non-negative whole number of seconds, got ${JSON.stringify(obj.ttl)}`);
    }
    ttlS = obj.ttl;
  }

  if (obj.name !== undefined && obj.name !== null && typeof obj.name !== "string") {
    fail(`'name' must be a string, got ${JSON.stringify(obj.name)}`);
  }

  const { card, fromPayload } = findCard(obj);
  const rawSkills = Array.isArray(obj.skills) ? obj.skills : Array.isArray(card.skills) ? card.skills : [];
  if (rawSkills.length > limits.maxSkills) {
    fail(
      `the card has ${rawSkills.length} skills; at most ${limits.maxSkills} are accepted (registry.maxSkills) — group related skills into one`,
    );
  }
  const skills = rawSkills.map(readSkill).filter((s): s is SkillText => s !== undefined);

  const name = text(obj.name) ?? text(card.name) ?? mailbox;
  const prosePayload = fromPayload ? undefined : text(obj.payload);
  const descriptions = [text(obj.description), text(card.description), prosePayload].filter(
    (s): s is string => s !== undefined,
  );
  const description = [...new Set(descriptions)].join(" ");

  const tagSet = new Set<string>();
  for (const tag of [...strings(obj.tags), ...strings(card === obj ? undefined : card.tags)]) {
    tagSet.add(normalizeTag(tag));
  }
  for (const skill of skills) for (const tag of skill.tags) tagSet.add(normalizeTag(tag));
  tagSet.delete("");

  let agentInfo: string;
  if (typeof obj.payload === "string" && obj.payload !== "") agentInfo = obj.payload;
  else if (isObject(obj.agent_card)) agentInfo = JSON.stringify(obj.agent_card);
  else agentInfo = json;

  return {
    mailbox,
    kind,
    name,
    description,
    version: text(obj.version) ?? text(card.version),
    tags: [...tagSet],
    skills,
    ttlS,
    bodyJson: json,
    agentInfo,
    hasOwnName: text(obj.name) !== undefined,
  };
}

/** REGISTER's `kind`: absent (or null) is an agent. */
export function readKind(value: unknown): ResourceKind {
  if (value === undefined || value === null) return "agent";
  if (typeof value !== "string" || !(RESOURCE_KINDS as readonly string[]).includes(value)) {
    fail(
      `unknown 'kind' ${JSON.stringify(value)}: give ${RESOURCE_KINDS.map((k) => `"${k}"`).join(" or ")} (agent when left out)`,
    );
  }
  return value as ResourceKind;
}

/** An MCP server's URL: absolute http(s), normalised so that one server has one key. */
export function readServerUrl(value: unknown, field = "url"): string {
  if (value === undefined || value === null || value === "") {
    fail(
      `an MCP server needs '${field}': where it is reached (its endpoint, or its server card's URL), e.g. "https://tools.example.com/mcp"`,
    );
  }
  if (typeof value !== "string") fail(`'${field}' must be a string (an http(s) URL)`);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    fail(`'${field}' ${JSON.stringify(value)} is not a URL; give an absolute http(s) URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    fail(`'${field}' must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.href.length > MAX_MAILBOX_LENGTH)
    fail(`'${field}' must be at most ${MAX_MAILBOX_LENGTH} characters`);
  return url.href;
}

/**
 * An MCP server's registration: `url` (required), its server card inline in `server_card`
 * (optional; its tools are indexed as skills), and the fields every registration has.
 */
function readMcpServer(obj: JsonObject, json: string, limits: RegistrationLimits): ParsedRegistration {
  for (const field of AGENT_ONLY_FIELDS) {
    if (obj[field] !== undefined) {
      fail(
        `'${field}' belongs to agents: an MCP server (kind "mcp-server") is reached by its 'url' and has no ${field === "mailbox" ? "mailbox" : "A2A card"}; drop '${field}' or register an agent`,
      );
    }
  }
  const url = readServerUrl(obj.url);
  let ttlS: number | undefined;
  if (obj.ttl !== undefined && obj.ttl !== null) {
    if (typeof obj.ttl !== "number" || !Number.isSafeInteger(obj.ttl) || obj.ttl < 0) {
      fail(`'ttl' must be a non-negative whole number of seconds, got ${JSON.stringify(obj.ttl)}`);
    }
    ttlS = obj.ttl;
  }
  if (obj.name !== undefined && obj.name !== null && typeof obj.name !== "string") {
    fail(`'name' must be a string, got ${JSON.stringify(obj.name)}`);
  }
  if (obj.server_card !== undefined && obj.server_card !== null && !isObject(obj.server_card)) {
    fail("'server_card' must be a JSON object (the MCP server card)");
  }
  const card: JsonObject = isObject(obj.server_card) ? obj.server_card : {};
  const rawTools = Array.isArray(card.tools) ? card.tools : [];
  if (rawTools.length > limits.maxSkills) {
    fail(
      `the server card has ${rawTools.length} tools; at most ${limits.maxSkills} are accepted (registry.maxSkills)`,
    );
  }
  const tools = rawTools.map(readSkill).filter((s): s is SkillText => s !== undefined);
  const serverInfo = isObject(card.serverInfo) ? card.serverInfo : {};
  const name = text(obj.name) ?? text(card.name) ?? text(serverInfo.name) ?? new URL(url).host;
  const descriptions = [text(obj.description), text(card.description)].filter(
    (s): s is string => s !== undefined,
  );
  const tagSet = new Set<string>();
  for (const tag of [...strings(obj.tags), ...strings(card.tags)]) tagSet.add(normalizeTag(tag));
  tagSet.delete("");
  return {
    mailbox: mcpServerKey(url),
    kind: "mcp-server",
    url,
    name,
    description: [...new Set(descriptions)].join(" "),
    version: text(obj.version) ?? text(card.version) ?? text(serverInfo.version),
    tags: [...tagSet],
    skills: tools,
    ttlS,
    bodyJson: json,
    agentInfo: isObject(obj.server_card) ? JSON.stringify(obj.server_card) : json,
    hasOwnName: text(obj.name) !== undefined,
  };
}
