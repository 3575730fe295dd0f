import { readFileSync } from "node:fs";
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
  mailbox: string;
  name?: string;
  ttl?: number;
}

type Card = Record<string, unknown>;

/** The card paths A2A servers publish: v0.3+ first, then the v0.2 name. */
const WELL_KNOWN = [".well-known/agent-card.json", ".well-known/agent.json"];

async function fetchJson(url: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, {
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: "application/json" },
  });
  if (!response.ok) throw new UsageError(`${url} answered HTTP ${response.status}`);
  try {
    return await response.json();
  } catch (err) {
    throw new UsageError(`${url} did not return JSON: ${(err as Error).message}`);
  }
}

/** Reads the card(s) from a file or URL; a bare site URL means its well-known card. */
async function readCards(source: string, timeoutMs: number): Promise<{ cards: Card[]; from: string }> {
  let value: unknown;
  let from = source;
  if (/^https?:\/\//i.test(source)) {
    const url = new URL(source);
    if (url.pathname.endsWith(".json")) value = await fetchJson(url.href, timeoutMs);
    else {
      const errors: string[] = [];
      const base = url.href.endsWith("/") ? url.href : `${url.href}/`;
      for (const path of WELL_KNOWN) {
        const candidate = new URL(path, base).href;
        try {
          value = await fetchJson(candidate, timeoutMs);
          from = candidate;
          break;
        } catch (err) {
          errors.push((err as Error).message);
        }
      }
      if (value === undefined) throw new UsageError(`no agent card found: ${errors.join("; ")}`);
    }
  } else {
    const text = readFileSync(source, "utf8");
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${source} is not JSON: ${(err as Error).message}`);
    }
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
  return { cards: cards as Card[], from };
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ".")
    .replace(/^\.+|\.+$/g, "");

/** `mq9 agent import <url-or-file>`: registers A2A cards (v1.0 or v0.3) under a mailbox. */
export function registerAgentImport(agent: Command): void {
  clientCommand(agent.command("import"))
    .description("register A2A agent cards read from a URL (its /.well-known/agent-card.json) or a file")
    .argument(
      "<url-or-file>",
      "https://host (well-known card), a card URL, or a JSON file with a card or an array of cards",
    )
    .requiredOption(
      "--mailbox <mail_address>",
      "mailbox the agent reads; with several cards use {name} in it",
    )
    .option("--name <name>", "register under this name instead of the card's")
    .option(
      "--ttl <seconds>",
      "drop the agent after this long without register/report; 0 = never",
      integer("--ttl"),
    )
    .addHelpText(
      "after",
      `
Examples:
  mq9 agent import https://agent.example.com --mailbox agents.invoice
  mq9 agent import cards.json --mailbox "agents.{name}" --ttl 3600`,
    )
    .action((source: string, flags: ImportFlags) =>
      withClient(flags, async (client) => {
        const { cards, from } = await readCards(source, flags.timeout);
        if (cards.length > 1 && !flags.mailbox.includes("{name}")) {
          throw new UsageError(`${from} holds ${cards.length} cards: give --mailbox with {name} in it`);
        }
        for (const card of cards) {
          const body: AgentRegistration = {
            ...card,
            mailbox: flags.mailbox.replaceAll("{name}", slug(String(card.name))),
          };
          if (flags.name !== undefined) body.name = flags.name;
          if (flags.ttl !== undefined) body.ttl = flags.ttl;
          await client.register(body);
          if (flags.json) printJson({ imported: true, name: body.name, mailbox: body.mailbox, from });
          else process.stdout.write(`imported ${body.name} → ${body.mailbox} (from ${from})\n`);
        }
      }),
    );
}
