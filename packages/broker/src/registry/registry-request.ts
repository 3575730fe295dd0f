import { Defaults, Errors } from "@mq9/protocol";
import { badRequest, type JsonObject, readJsonObject } from "./json-body.js";
import { bareMailbox } from "./registration.js";

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
  online: boolean;
  includeStatus: boolean;
  /** Adds `_score` (similarity, BM25 or their fusion, higher is better) to ranked entries. */
  includeScore: boolean;
  /** Adds the derived `agent_info` where the body has none (false only when asked). */
  includeAgentInfo: boolean;
  limit: number;
  page: number;
}

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

export function parseDiscover(body: Uint8Array): DiscoverRequest {
  const command = "AGENT.DISCOVER";
  const { obj } = readJsonObject(body, command, { emptyAsObject: true });
  let tags: string[] | undefined;
  if (obj.tags !== undefined && obj.tags !== null) {
    const raw = typeof obj.tags === "string" ? [obj.tags] : obj.tags;
    if (!Array.isArray(raw) || raw.some((t) => typeof t !== "string")) {
      throw badRequest(Errors.invalidPayload(command, "'tags' must be an array of strings"));
    }
    const cleaned = (raw as string[]).map((t) => t.trim().toLowerCase()).filter((t) => t !== "");
    tags = cleaned.length > 0 ? [...new Set(cleaned)] : undefined;
  }
  const limit = optionalUInt(obj, "limit", command) || Defaults.discoverLimit;
  return {
    text: optionalString(obj, "text", command),
    semantic: optionalString(obj, "semantic", command),
    tags,
    online: optionalBool(obj, "online", command),
    includeStatus: optionalBool(obj, "include_status", command),
    includeScore: optionalBool(obj, "include_score", command),
    includeAgentInfo: optionalBool(obj, "include_agent_info", command, true),
    limit: Math.min(limit, MAX_DISCOVER_LIMIT),
    page: Math.max(1, optionalUInt(obj, "page", command) ?? 1),
  };
}
