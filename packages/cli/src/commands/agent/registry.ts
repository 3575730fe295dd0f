import { readFileSync } from "node:fs";
import type { AgentManifest, ResolvedManifest } from "@mq9/agent";
import type { AgentEntry, AgentRegistration, McpServerRegistration } from "@mq9/client";
import { agentInfoOf } from "@mq9/client";
import { type Command, InvalidArgumentError } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  withClient,
} from "../../shared/client-command.js";
import { cell, printJson, printTable, say } from "../../shared/output.js";

interface SelectorFlags extends ConnectionFlags {
  name?: string;
  mailbox?: string;
  /** An MCP server, by its URL. */
  mcpServer?: string;
}

interface RegisterFlags extends SelectorFlags {
  payload?: string;
  ttl?: number;
  manifest?: string;
}

interface ReportFlags extends SelectorFlags {
  info?: string;
}

interface DiscoverFlags extends ConnectionFlags {
  kind?: string;
  semantic?: string;
  minScore?: number;
  limit?: number;
  page?: number;
}

async function readJsonObject(source: string): Promise<Record<string, unknown>> {
  let text: string;
  if (source === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString("utf8");
  } else {
    try {
      text = readFileSync(source, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : (err as Error).message;
      throw new UsageError(`cannot read ${source}: ${why}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const where = source === "-" ? "stdin" : source;
    throw new UsageError(
      `${where}${jsonErrorPosition(text, err as Error)} is not JSON: ${(err as Error).message}`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new UsageError(`${source === "-" ? "stdin" : source} must hold a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** `:line:column` of a JSON.parse error that gives a position, so an editor can jump there. */
function jsonErrorPosition(text: string, err: Error): string {
  const at = /at position (\d+)/.exec(err.message);
  if (!at) return "";
  const before = text.slice(0, Number(at[1])).split("\n");
  return `:${before.length}:${before.at(-1)!.length + 1}`;
}

/** A --min-score value: a number from 0 to 1. */
function score(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0 || n > 1) {
    throw new InvalidArgumentError(`--min-score must be a number from 0 to 1, got '${value}'`);
  }
  return n;
}

function selector(flags: SelectorFlags): { name?: string; mailbox?: string; url?: string } {
  if (flags.mcpServer !== undefined) {
    if (flags.mailbox !== undefined)
      throw new UsageError("give --mailbox (an agent) or --mcp-server, not both");
    return { url: flags.mcpServer };
  }
  if (flags.name === undefined && flags.mailbox === undefined) {
    throw new UsageError(
      "name the agent with --mailbox and/or --name (an MCP server with --mcp-server <url>)",
    );
  }
  const body: { name?: string; mailbox?: string } = {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.mailbox !== undefined) body.mailbox = flags.mailbox;
  return body;
}

/** DISCOVER's kind from --kind: agent (the default), mcp-server, or all. */
function kindOf(value: string): string | string[] {
  if (value === "all") return ["agent", "mcp-server"];
  if (value === "agent" || value === "mcp-server") return value;
  throw new UsageError(`--kind must be agent, mcp-server or all, got '${value}'`);
}

/**
 * The registration of an MCP server: its URL, its server card from the file (if any) and the
 * flags an MCP server may carry; agent-only flags are refused.
 */
async function serverRegistration(
  card: string | undefined,
  flags: RegisterFlags,
): Promise<McpServerRegistration> {
  for (const [flag, value] of [
    ["--mailbox", flags.mailbox],
    ["--payload", flags.payload],
    ["--manifest", flags.manifest],
  ] as const) {
    if (value !== undefined) {
      throw new UsageError(`${flag} belongs to agents: an MCP server is reached by its --mcp-server URL`);
    }
  }
  const body: McpServerRegistration = { kind: "mcp-server", url: flags.mcpServer! };
  if (card !== undefined) body.server_card = await readJsonObject(card);
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.ttl !== undefined) body.ttl = flags.ttl;
  return body;
}

/** The prose a DISCOVER entry carries, wherever its registration put it. */
function description(agent: AgentEntry): string {
  const card = (agent.agent_card ?? agent.server_card) as { description?: unknown } | undefined;
  for (const candidate of [agent.payload, agent.description, card?.description]) {
    if (typeof candidate === "string" && candidate !== "") return candidate;
  }
  return agentInfoOf(agent) || "-";
}

/**
 * The registration of an orchestrator manifest: what the Agent SDK registers, so the router
 * can send the agent work. Without heartbeats it stays alive until its --ttl (0 = always).
 */
async function manifestRegistration(
  flags: RegisterFlags,
): Promise<{ name: string; mailbox: string; body: AgentRegistration }> {
  const raw = await readJsonObject(flags.manifest!);
  if (flags.name !== undefined) raw.name = flags.name;
  if (flags.mailbox !== undefined) raw.mailbox = flags.mailbox;
  // Only --manifest needs the Agent SDK's manifest rules: loaded here, not by every agent command.
  const { ManifestError, registrationBody, resolveManifest } = await import("@mq9/agent");
  let manifest: ResolvedManifest;
  try {
    manifest = resolveManifest(raw as unknown as AgentManifest);
  } catch (err) {
    if (err instanceof ManifestError) throw new UsageError(`${flags.manifest}: ${err.message}`);
    throw err;
  }
  const body = registrationBody(manifest, 0, flags.ttl ?? 0) as AgentRegistration;
  if (flags.payload !== undefined) body.payload = flags.payload;
  return { name: manifest.name, mailbox: manifest.mailbox, body };
}

/** `mq9 agent register|unregister|report|get|discover`: the registry through the client SDK. */
export function registerRegistryCommands(agent: Command): void {
  clientCommand(agent.command("register"))
    .description(
      "register an agent (re-registering the same mailbox replaces it), or an MCP server with --mcp-server",
    )
    .argument(
      "[card]",
      "JSON file with the registration or A2A AgentCard body; with --mcp-server, the MCP server card ('-' = stdin)",
    )
    .option("--name <name>", "agent name")
    .option("--mailbox <mail_address>", "where the agent reads its mail")
    .option(
      "--mcp-server <url>",
      "register an MCP server reached at this URL instead of an agent (no mailbox; found by discover --kind mcp-server)",
    )
    .option("--payload <text>", "what the agent does, in prose")
    .option(
      "--manifest <file>",
      "an orchestrator manifest {name, capabilities, endpoint, max_concurrency, weight, tags}: the router can use the agent",
    )
    .option(
      "--ttl <seconds>",
      "drop the agent after this long without register/report; 0 = never",
      integer("--ttl"),
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent register --name translator --mailbox agents.translator --payload "Translates EN, ZH, JA"
  mq9 agent register card.json --mailbox agents.translator --ttl 120
  mq9 agent register --manifest intent_agent.json
  mq9 agent register server-card.json --mcp-server https://tools.example.com/mcp`,
    )
    .action((card: string | undefined, flags: RegisterFlags) =>
      withClient(flags, async (client) => {
        if (flags.mcpServer !== undefined) {
          const server = await serverRegistration(card, flags);
          await client.register(server);
          if (flags.json)
            printJson({ registered: true, kind: "mcp-server", name: server.name, url: server.url });
          else process.stdout.write(`registered MCP server ${server.name ?? server.url}\n`);
          return;
        }
        if (flags.manifest !== undefined) {
          if (card !== undefined) throw new UsageError("give a card file or --manifest, not both");
          const manifest = await manifestRegistration(flags);
          await client.ensureMailbox({ name: manifest.mailbox });
          await client.register(manifest.body);
          if (flags.json) printJson({ registered: true, name: manifest.name, mailbox: manifest.mailbox });
          else process.stdout.write(`registered ${manifest.name} (mailbox ${manifest.mailbox})\n`);
          return;
        }
        const body: AgentRegistration = card === undefined ? {} : await readJsonObject(card);
        if (flags.name !== undefined) body.name = flags.name;
        if (flags.mailbox !== undefined) body.mailbox = flags.mailbox;
        if (flags.payload !== undefined) body.payload = flags.payload;
        if (flags.ttl !== undefined) body.ttl = flags.ttl;
        if (Object.keys(body).length === 0) {
          throw new UsageError("nothing to register: give a card file or --name/--mailbox/--payload");
        }
        await client.register(body);
        if (flags.json) printJson({ registered: true, name: body.name, mailbox: body.mailbox });
        else process.stdout.write(`registered ${body.name ?? body.mailbox ?? "agent"}\n`);
      }),
    );

  clientCommand(agent.command("unregister"))
    .description("remove an agent (or an MCP server) from the registry")
    .option("--mailbox <mail_address>", "the agent's mailbox")
    .option("--name <name>", "the agent's name")
    .option("--mcp-server <url>", "the MCP server registered with this URL")
    .addHelpText(
      "after",
      "\nExamples:\n  mq9 agent unregister --mailbox agents.translator\n  mq9 agent unregister --mcp-server https://tools.example.com/mcp",
    )
    .action((flags: SelectorFlags) =>
      withClient(flags, async (client) => {
        const body = selector(flags);
        await client.unregister(body);
        if (flags.json) printJson({ unregistered: true, ...body });
        else process.stdout.write(`unregistered ${body.name ?? body.mailbox ?? body.url}\n`);
      }),
    );

  clientCommand(agent.command("report"))
    .description("report an agent's status (a heartbeat)")
    .option("--mailbox <mail_address>", "the agent's mailbox")
    .option("--name <name>", "the agent's name")
    .option("--mcp-server <url>", "the MCP server registered with this URL")
    .option("--info <text>", "status text (report_info)")
    .addHelpText(
      "after",
      '\nExamples:\n  mq9 agent report --mailbox agents.translator --info "running, 12 jobs done"',
    )
    .action((flags: ReportFlags) =>
      withClient(flags, async (client) => {
        const body = { ...selector(flags), ...(flags.info === undefined ? {} : { report_info: flags.info }) };
        await client.report(body);
        if (flags.json) printJson({ reported: true, ...body });
        else process.stdout.write(`reported ${body.name ?? body.mailbox ?? body.url}\n`);
      }),
    );

  clientCommand(agent.command("get"))
    .description("show the registration of one mailbox, or those of one name, with its last status")
    .option("--mailbox <address>", "the agent's mailbox")
    .option("--name <name>", "the agent's registered name")
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent get --mailbox agent.translator.inbox
  mq9 agent get --name translator`,
    )
    .action((flags: SelectorFlags) =>
      withClient(flags, async (client) => {
        const agents = await client.lookupAgents(selector(flags));
        if (agents.length === 0) {
          const what = flags.mailbox !== undefined ? `mailbox ${flags.mailbox}` : `name ${flags.name}`;
          throw new Error(`no agent is registered with ${what}`);
        }
        for (const a of agents) printJson(a);
      }),
    );

  clientCommand(agent.command("discover"))
    .description("find agents: all of them, by full text, or by a natural-language --semantic query")
    .argument("[text]", "full-text query; omitted: list agents")
    .option("--semantic <query>", "natural-language query (wins over text)")
    .option("--kind <kind>", "what to find: agent (the default), mcp-server, or all")
    .option("-n, --limit <n>", "agents per page (default 20)", integer("--limit", 1))
    .option("--page <n>", "page, from 1", integer("--page", 1))
    .option("--min-score <score>", "with --semantic: only agents scoring at least this (0..1)", score)
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent discover                            # everyone, 20 per page
  mq9 agent discover translator
  mq9 agent discover --semantic "who can translate Japanese?" --limit 3 --json
  mq9 agent discover weather --kind mcp-server`,
    )
    .action((text: string | undefined, flags: DiscoverFlags) =>
      withClient(flags, async (client) => {
        const query: Record<string, unknown> = {};
        if (text !== undefined) query.text = text;
        if (flags.semantic !== undefined) query.semantic = flags.semantic;
        if (flags.limit !== undefined) query.limit = flags.limit;
        if (flags.page !== undefined) query.page = flags.page;
        if (flags.minScore !== undefined) query.min_score = flags.minScore;
        if (flags.kind !== undefined) query.kind = kindOf(flags.kind);
        const reply = await client.discoverPage(query);
        const agents = reply.agents;
        // A fallback ranking, a trimmed page or skills not yet searchable: said on stderr, never hidden.
        if (reply.warning) say(`warning: ${reply.warning}`);
        if (flags.json) {
          for (const a of agents) printJson(a);
        } else if (agents.length === 0) {
          process.stdout.write("(no agents)\n");
        } else {
          // An MCP server has a URL where an agent has a mailbox.
          const servers = flags.kind !== undefined && flags.kind !== "agent";
          printTable(
            ["NAME", servers ? "MAILBOX OR URL" : "MAILBOX", "DESCRIPTION"],
            agents.map((a) => [
              String(a.name ?? "-"),
              String(a.mailbox ?? a.url ?? "-"),
              cell(description(a)),
            ]),
          );
        }
      }),
    );
}
