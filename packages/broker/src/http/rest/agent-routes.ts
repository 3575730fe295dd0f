import { Subjects } from "@mq9/protocol";
import type { Registry } from "../../registry.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { ApiError } from "./api-error.js";
import {
  AgentEntry,
  AgentListQuery,
  AgentParams,
  Agents,
  DiscoverBody,
  NOT_BLANK,
  RegisterBody,
  Registered,
  UnregisterBody,
  Unregistered,
} from "./api-schemas.js";
import { callMq9 } from "./mq9-call.js";
import type { RestRouter } from "./rest-router.js";

type Entry = Record<string, unknown> & { mailbox?: string; url?: string };

/** DISCOVER's `kind` for the API's kind filter: agents unless asked. */
function kindsOf(kind: "agent" | "mcp-server" | "all" | undefined): string | string[] | undefined {
  return kind === "all" ? ["agent", "mcp-server"] : kind;
}

/** What names a registration among the heartbeating: an agent's mailbox, an MCP server's url. */
const keyOf = (entry: Entry) => String(entry.mailbox ?? entry.url);

function registryOff(): ApiError {
  return new ApiError(
    503,
    "REGISTRY_OFF",
    "the agent registry is turned off in this broker; start mq9 serve without turning it off to list and discover agents",
  );
}

/** The mailboxes of agents that heartbeat (registered with a ttl, and within it). */
async function heartbeating(registry: Registry): Promise<Set<string>> {
  const body = Buffer.from(
    JSON.stringify({ online: true, limit: 1000, include_agent_info: false, kind: ["agent", "mcp-server"] }),
  );
  const { agents } = await registry.discover(body);
  return new Set(
    agents.map((pieces) =>
      keyOf(JSON.parse(Buffer.concat(pieces.map((piece) => Buffer.from(piece))).toString()) as Entry),
    ),
  );
}

/** DISCOVER's body for a discovery box query. */
function discoverRequest(body: {
  mode?: string;
  query?: string;
  tags?: string[];
  online?: boolean;
  limit?: number;
  page?: number;
  kind?: "agent" | "mcp-server" | "all";
}): Record<string, unknown> {
  // Blank as the document says it (NOT_BLANK), not as String.trim, which knows more spaces.
  const query =
    body.query !== undefined && NOT_BLANK.test(body.query)
      ? body.query.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, "")
      : undefined;
  const mode = body.mode ?? (query ? "text" : "tag");
  if (mode !== "tag" && !query) {
    throw new ApiError(
      400,
      "INVALID_REQUEST",
      `invalid request: body.query: give the text a ${mode} search looks for`,
    );
  }
  if (mode === "tag" && !(body.tags && body.tags.length > 0)) {
    throw new ApiError(
      400,
      "INVALID_REQUEST",
      "invalid request: body.tags: give at least one tag for a tag search",
    );
  }
  return {
    ...(mode === "text" || mode === "hybrid" ? { text: query } : {}),
    ...(mode === "semantic" || mode === "hybrid" ? { semantic: query } : {}),
    tags: body.tags,
    online: body.online,
    limit: body.limit,
    page: body.page,
    include_status: true,
    include_score: true,
    kind: kindsOf(body.kind),
  };
}

/** The agent registry: the same DISCOVER as over NATS, with status and scores. */
export function mountAgentRoutes(router: RestRouter, service: Mq9Service, registry?: Registry): void {
  const registryOn = () => {
    if (!registry) throw registryOff();
    return registry;
  };

  router.add({
    method: "GET",
    path: "/api/v1/agents",
    tag: "Agents",
    summary: "List registered agents (and, with kind, MCP servers) with their last heartbeat and status",
    query: AgentListQuery,
    responses: { 200: { description: "agents by name", schema: Agents } },
    errors: [400, 503],
    handler: async ({ query, principal }) => {
      const registry = registryOn();
      const request = {
        online: query.online,
        limit: query.limit ?? 200,
        page: query.page,
        include_status: true,
        kind: kindsOf(query.kind),
      };
      const reply = await callMq9(service, Subjects.agentDiscover, request, { principal });
      const online = await heartbeating(registry);
      const agents = (reply.agents as Entry[]).map((agent) => ({
        ...agent,
        online: online.has(keyOf(agent)),
      }));
      return { status: 200, body: { agents } };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/agents/:mailbox",
    tag: "Agents",
    summary: "One agent's registration (its AgentCard as registered) and status",
    params: AgentParams,
    responses: { 200: { description: "the agent", schema: AgentEntry } },
    errors: [404, 503],
    handler: async ({ params }) => {
      const registry = registryOn();
      const pieces = await registry.entryOf(params.mailbox);
      if (!pieces) throw new ApiError(404, "AGENT_NOT_FOUND", "agent not found");
      const entry = JSON.parse(Buffer.concat(pieces.map((piece) => Buffer.from(piece))).toString()) as Entry;
      const online = await heartbeating(registry);
      return { status: 200, body: { ...entry, online: online.has(params.mailbox) } };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/agents/register",
    tag: "Agents",
    summary:
      "Register an agent (its card, with mailbox) or an MCP server (kind mcp-server, url, server_card): REGISTER as the caller",
    body: RegisterBody,
    responses: { 200: { description: "registered (or replaced)", schema: Registered } },
    errors: [400, 403, 503],
    handler: async ({ body, principal }) => {
      registryOn();
      await callMq9(service, Subjects.agentRegister, body, { principal });
      return { status: 200, body: { registered: true as const, kind: body.kind ?? ("agent" as const) } };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/agents/unregister",
    tag: "Agents",
    summary: "Remove an agent (by mailbox and/or name) or an MCP server (by url): UNREGISTER as the caller",
    body: UnregisterBody,
    responses: { 200: { description: "removed (an unknown one is not an error)", schema: Unregistered } },
    errors: [400, 403, 503],
    handler: async ({ body, principal }) => {
      registryOn();
      await callMq9(service, Subjects.agentUnregister, body, { principal });
      return { status: 200, body: { unregistered: true as const } };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/agents/discover",
    tag: "Agents",
    summary: "Discover agents by tags, full text, meaning (semantic) or both (hybrid), with scores",
    body: DiscoverBody,
    responses: { 200: { description: "the best matches first", schema: Agents } },
    errors: [400, 503],
    handler: async ({ body, principal }) => {
      registryOn();
      const reply = await callMq9(service, Subjects.agentDiscover, discoverRequest(body), { principal });
      return { status: 200, body: reply };
    },
  });
}
