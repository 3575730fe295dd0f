import type { Mq9Reply } from "./messages.js";

/**
 * An AGENT.REGISTER body. Any JSON object is accepted and kept verbatim; `name`
 * and/or `mailbox` identify the agent (the official SDKs always send both).
 */
export interface AgentRegistration {
  name?: string;
  /** Bare mail_address or an `mq9://host/mail_address` URI the agent reads from. */
  mailbox?: string;
  /** Prose about the agent (the reference broker requires it). */
  payload?: string;
  /** An A2A AgentCard, as Python/Java A2A agents send it. */
  agent_card?: Record<string, unknown>;
  /** Seconds without REGISTER or REPORT after which the agent is no longer discovered; 0 = never. */
  ttl?: number;
  /** mq9 extension: what is registered; `"agent"` when left out (see McpServerRegistration). */
  kind?: "agent";
  [field: string]: unknown;
}

/**
 * mq9 extension, REGISTER of an MCP server: reached by its `url` (its endpoint, or its server
 * card's URL), with no mailbox; found by DISCOVER only when its `kind` filter asks for MCP servers.
 */
export interface McpServerRegistration {
  kind: "mcp-server";
  /** An absolute http(s) URL: the server's key, so registering it again replaces it. */
  url: string;
  name?: string;
  description?: string;
  tags?: string[];
  /** The MCP server card (`name`, `description`, `tools`, …): its tools are searched as skills. */
  server_card?: Record<string, unknown>;
  ttl?: number;
  [field: string]: unknown;
}

/** AGENT.UNREGISTER: the SDKs send `mailbox`, the reference broker and MCP send `name`. */
export interface AgentUnregisterRequest {
  name?: string;
  mailbox?: string;
  /** mq9 extension: an MCP server, by the `url` it was registered with. */
  url?: string;
}

/** AGENT.REPORT (heartbeat): `name` and/or `mailbox`, a status text and any extra keys. */
export interface AgentReportRequest {
  name?: string;
  mailbox?: string;
  report_info?: string;
  [field: string]: unknown;
}

/** AGENT.DISCOVER: no query lists every agent; `semantic` wins over `text`. Always paginated. */
export interface AgentDiscoverRequest {
  text?: string;
  semantic?: string;
  /** Default 20. */
  limit?: number;
  /** From 1. */
  page?: number;
  /** mq9 extension: agents to skip before the page (instead of `page`); a reply's `next_offset`. */
  offset?: number;
  /** Only agents carrying every one of these tags (their card's or their skills', any case). */
  tags?: string[];
  /** mq9 extension, a direct lookup: only the registration of this mailbox. */
  mailbox?: string;
  /** mq9 extension, a direct lookup: only registrations of this name. */
  name?: string;
  /** mq9 extension: semantic and hybrid answers keep only agents whose calibrated score (0..1) reaches this. */
  min_score?: number;
  /** Only agents heard from (REGISTER or REPORT) within their ttl. */
  online?: boolean;
  /** Adds `_status` (last REPORT body) and `_last_seen` (unix seconds). */
  include_status?: boolean;
  /** Adds `_score` to ranked hits (similarity, BM25, or their fusion; higher is better). */
  include_score?: boolean;
  /**
   * mq9 extension, default true. false leaves out the derived `agent_info` of bodies that have
   * none of their own: it repeats the body (its `payload` text, its `agent_card`, or the whole
   * body as JSON), so the reply is about half the size.
   */
  include_agent_info?: boolean;
  /**
   * mq9 extension: which kinds of registration to answer, `"agent"` (the default, so that
   * `discover(...)[0].mailbox` is always a mailbox), `"mcp-server"`, or both in an array.
   */
  kind?: "agent" | "mcp-server" | ("agent" | "mcp-server")[];
  [field: string]: unknown;
}

/** One DISCOVER hit: the registered body's fields plus the derived `name`, `mailbox` and `agent_info`. */
export interface AgentEntry {
  name?: string;
  mailbox?: string;
  agent_info?: string;
  _status?: unknown;
  _last_seen?: number;
  _score?: number;
  [field: string]: unknown;
}

export interface AgentDiscoverReply extends Mq9Reply {
  agents: AgentEntry[];
  /** Agents the query matches in all, where the broker knows it (mq9 extension). */
  total?: number;
  /** Another page follows, from `next_offset` (mq9 extension). */
  has_more?: boolean;
  next_offset?: number;
  /** The page was cut short to stay within the max payload (mq9 extension). */
  truncated?: boolean;
  /** Skills registered moments ago that semantic search cannot find yet (mq9 extension). */
  pending_skills?: number;
  /** Why the answer is not what was asked for (a fallback ranking, a trimmed page, pending skills). */
  warning?: string;
}
