import { existsSync, readFileSync } from "node:fs";
import {
  ArdManifestError,
  fetchJsonDocument,
  isManifest,
  type ListedServer,
  MANIFEST_PATHS,
  mailboxFor,
  readManifest,
  serverRegistration,
} from "@mq9/broker/ard-manifest";
import { lookupRequest, registerAll } from "@mq9/broker/register-all";
import type { AgentRegistration } from "@mq9/client";
import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  integer,
  UsageError,
  withClient,
} from "../../shared/client-command.js";
import { printJson } from "../../shared/output.js";

interface ImportFlags extends ConnectionFlags {
  mailbox?: string;
  name?: string;
  ttl?: number;
  every?: number;
}

type Card = Record<string, unknown>;

/** The card paths A2A servers publish: v0.3+ first, then the v0.2 name. */
const WELL_KNOWN = [".well-known/agent-card.json", ".well-known/agent.json"];

/** A JSON document by URL; what keeps it from being read is the user's to fix (exit 2). */
const fetchJson = (url: string, timeoutMs: number) =>
  fetchJsonDocument(url, timeoutMs).catch((err: Error) => {
    throw new UsageError(err.message);
  });

/** A bare domain (`agents.example.com`) stands for its https site. */
function sourceUrl(source: string): string | undefined {
  if (/^https?:\/\//i.test(source)) return source;
  if (!existsSync(source) && /^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?$/i.test(source)) return `https://${source}`;
  return undefined;
}

/**
 * Reads the card(s) from a file or URL. A site (a bare domain, or a URL not ending in .json)
 * means its ARD manifest (/.well-known/ard.json, then ai-catalog.json), else its agent card; a
 * manifest, wherever it comes from, is validated whole and its A2A cards are listed.
 */
async function readCards(
  source: string,
  timeoutMs: number,
): Promise<{
  cards: Card[];
  servers: ListedServer[];
  from: string;
  skipped: { identifier: string; type: string }[];
}> {
  let value: unknown;
  let from = source;
  const url = sourceUrl(source);
  if (url !== undefined) {
    const parsed = new URL(url);
    if (parsed.pathname.endsWith(".json")) value = await fetchJson(parsed.href, timeoutMs);
    else {
      const errors: string[] = [];
      const base = parsed.href.endsWith("/") ? parsed.href : `${parsed.href}/`;
      for (const path of [...MANIFEST_PATHS, ...WELL_KNOWN]) {
        const candidate = new URL(path, base).href;
        try {
          value = await fetchJson(candidate, timeoutMs);
          from = candidate;
          break;
        } catch (err) {
          errors.push((err as Error).message);
        }
      }
      if (value === undefined)
        throw new UsageError(`no ARD manifest or agent card found: ${errors.join("; ")}`);
    }
  } else {
    const text = readFileSync(source, "utf8");
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${source} is not JSON: ${(err as Error).message}`);
    }
  }
  if (isManifest(value)) {
    const contents = await readManifest(value, from, (url) => fetchJson(url, timeoutMs)).catch((err) => {
      throw err instanceof ArdManifestError ? new UsageError(err.message) : err;
    });
    return {
      cards: contents.cards.map((listed) => listed.card),
      servers: contents.servers,
      from,
      skipped: contents.skipped,
    };
  }
  const cards = Array.isArray(value) ? value : [value];
  for (const card of cards) {
    if (
      typeof card !== "object" ||
      card === null ||
      Array.isArray(card) ||
      typeof (card as Card).name !== "string"
    ) {
      throw new UsageError(`${from} does not hold an A2A agent card (a JSON object with a name)`);
    }
  }
  return { cards: cards as Card[], servers: [], from, skipped: [] };
}

/** `mq9 agent import <url-or-file>`: registers A2A cards (v1.0 or v0.3) under a mailbox, and a manifest's MCP servers by URL. */
export function registerAgentImport(agent: Command): void {
  clientCommand(agent.command("import"))
    .description(
      "register A2A agent cards (and a manifest's MCP servers, by URL) read from a publisher's ARD manifest (/.well-known/ard.json), a card URL (its /.well-known/agent-card.json) or a file",
    )
    .argument(
      "<url-or-file>",
      "a domain or https://host (its ARD manifest, else its card), a manifest or card URL, or a JSON file with a manifest, a card or an array of cards",
    )
    .option(
      "--mailbox <mail_address>",
      "mailbox the agent reads; with several cards use {name} in it (needed when there are A2A cards)",
    )
    .option("--name <name>", "register under this name instead of the card's")
    .option(
      "--ttl <seconds>",
      "drop the agent after this long without register/report; 0 = never",
      integer("--ttl"),
    )
    .option(
      "--every <seconds>",
      "re-crawl the source this often until stopped, removing agents and MCP servers that left its manifest",
      integer("--every"),
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent import https://agent.example.com --mailbox agents.invoice
  mq9 agent import agents.example.com --mailbox "agents.{name}" --every 3600
  mq9 agent import tools.example.com          (a manifest of MCP servers only: no --mailbox)
  mq9 agent import cards.json --mailbox "agents.{name}" --ttl 3600`,
    )
    .action((source: string, flags: ImportFlags) =>
      withClient(flags, async (client) => {
        // What the last round registered: agents by mailbox, MCP servers by url.
        let imported = new Set<string>();
        let importedServers = new Set<string>();
        const once = async () => {
          const { cards, servers, from, skipped } = await readCards(source, flags.timeout);
          const template = flags.mailbox;
          if (cards.length > 0 && template === undefined) {
            throw new UsageError(`${from} holds A2A cards: give --mailbox (with {name} in it for several)`);
          }
          if (cards.length > 1 && !template!.includes("{name}")) {
            throw new UsageError(`${from} holds ${cards.length} cards: give --mailbox with {name} in it`);
          }
          const bodies = cards.map((card) => {
            const mailbox = mailboxFor(template!, String(card.name));
            const body: AgentRegistration & { mailbox: string } = { ...card, mailbox };
            if (flags.name !== undefined) body.name = flags.name;
            if (flags.ttl !== undefined) body.ttl = flags.ttl;
            return body;
          });
          // All or nothing: a REGISTER refused midway puts back what this round replaced.
          await registerAll(
            {
              register: (body) => client.register(body as AgentRegistration),
              unregister: (selector) => client.unregister(selector),
              lookup: async (key) => (await client.discover(lookupRequest(key)))[0],
            },
            [...bodies, ...servers.map((server) => serverRegistration(server, flags.ttl))],
          );
          for (const body of bodies) {
            if (flags.json) printJson({ imported: true, name: body.name, mailbox: body.mailbox, from });
            else process.stdout.write(`imported ${body.name} → ${body.mailbox} (from ${from})\n`);
          }
          for (const server of servers) {
            if (flags.json)
              printJson({ imported: true, kind: "mcp-server", name: server.name, url: server.url, from });
            else process.stdout.write(`imported MCP server ${server.name} → ${server.url} (from ${from})\n`);
          }
          for (const { identifier, type } of skipped) {
            if (flags.json) printJson({ skipped: identifier, type });
            else
              process.stdout.write(
                `skipped ${identifier} (${type}): only A2A agent cards and MCP servers with a URL are imported\n`,
              );
          }
          // A re-crawl removes what left the manifest since the last round.
          const now = new Set(bodies.map((body) => body.mailbox));
          for (const mailbox of imported) {
            if (now.has(mailbox)) continue;
            await client.unregister({ mailbox });
            if (flags.json) printJson({ removed: true, mailbox });
            else process.stdout.write(`removed ${mailbox}: it left ${from}\n`);
          }
          const nowServers = new Set(servers.map((server) => server.url));
          for (const url of importedServers) {
            if (nowServers.has(url)) continue;
            await client.unregister({ url });
            if (flags.json) printJson({ removed: true, kind: "mcp-server", url });
            else process.stdout.write(`removed MCP server ${url}: it left ${from}\n`);
          }
          imported = now;
          importedServers = nowServers;
        };
        await once();
        if (flags.every === undefined) return;
        const every = flags.every;
        await new Promise<void>((resolve) => {
          let timer: NodeJS.Timeout;
          const round = () => {
            timer = setTimeout(async () => {
              // A round that fails (the site is down, the manifest turned invalid) changes nothing.
              await once().catch((err: Error) =>
                process.stderr.write(`re-crawl failed, nothing changed: ${err.message}\n`),
              );
              round();
            }, every * 1000);
          };
          round();
          const stop = () => {
            clearTimeout(timer);
            resolve();
          };
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
      }),
    );
}
