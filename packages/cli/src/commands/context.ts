import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseServerUrl } from "@mq9/client";
import { type Command, Option } from "commander";
import { ExitCode, UsageError, usageExit } from "../shared/client-command.js";
import { authSummary, ContextStore, checkContextName, type SavedContext } from "../shared/contexts.js";
import { exitAfterOutput } from "../shared/exit.js";
import { printError, printJson, printTable, say } from "../shared/output.js";

interface AddFlags {
  server: string;
  token?: string;
  user?: string;
  password?: string;
  nkeySeed?: string;
  tlsCa?: string;
  http?: string;
  description?: string;
  select?: boolean;
  force?: boolean;
}

interface OutputFlags {
  json?: boolean;
}

/** Runs one context subcommand and exits: 0, or 2 for a usage problem (unknown context, bad value). */
async function run(flags: OutputFlags, work: (store: ContextStore) => void): Promise<void> {
  let code: number = ExitCode.ok;
  try {
    work(new ContextStore());
  } catch (err) {
    const usage = err instanceof UsageError;
    printError((err as Error).message, usage ? "USAGE" : "ERROR", flags.json, false);
    code = usage ? ExitCode.usage : ExitCode.brokerError;
  }
  await exitAfterOutput(code);
}

/** A file a context names must be there now, and is saved as an absolute path (it is read from anywhere). */
function existingFile(flag: string, file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`${flag}: no such file: ${path}`);
  return path;
}

function contextFrom(flags: AddFlags): SavedContext {
  try {
    parseServerUrl(flags.server.split(",")[0].trim());
  } catch (err) {
    throw new UsageError(`--server: ${(err as Error).message}`);
  }
  const kinds = [flags.token, flags.user, flags.nkeySeed].filter((v) => v !== undefined).length;
  if (kinds > 1) throw new UsageError("give one of --token, --user/--password or --nkey-seed");
  if (flags.password !== undefined && flags.user === undefined) {
    throw new UsageError("--password goes with --user");
  }
  if (flags.http !== undefined && !/^https?:\/\/./.test(flags.http)) {
    throw new UsageError(`--http '${flags.http}' must be an http:// or https:// URL`);
  }
  const context: SavedContext = { server: flags.server };
  if (flags.token !== undefined) context.token = flags.token;
  if (flags.user !== undefined) context.user = flags.user;
  if (flags.password !== undefined) context.password = flags.password;
  const seed = existingFile("--nkey-seed", flags.nkeySeed);
  if (seed !== undefined) context.nkey_seed = seed;
  const ca = existingFile("--tls-ca", flags.tlsCa);
  if (ca !== undefined) context.tls_ca = ca;
  if (flags.http !== undefined) context.http = flags.http;
  if (flags.description !== undefined) context.description = flags.description;
  return context;
}

/** A context as --json prints it: its fields without secrets, where it is saved, whether it is selected. */
function publicView(store: ContextStore, name: string, context: SavedContext): Record<string, unknown> {
  const { token, password, ...rest } = context;
  return {
    name,
    selected: store.selectedName() === name,
    ...rest,
    auth: authSummary(context),
    file: store.fileOf(name),
  };
}

/** `mq9 context add|use|ls|show|rm`: saved brokers and credentials, so that flags need not be repeated. */
export function registerContext(program: Command): void {
  const context = program
    .command("context")
    .description("saved server profiles (server, credentials, HTTP address), like 'nats context'")
    .exitOverride(usageExit)
    .addHelpText(
      "after",
      `
A command that talks to a broker takes each setting from, in this order: its flag, its
environment variable (MQ9_SERVER, MQ9_TOKEN …), the context named by --context (or MQ9_CONTEXT),
the selected context ('mq9 context use'), the default. The selected context is left out when
--server or --http (or MQ9_SERVER, MQ9_HTTP) names another broker. Contexts are files in $MQ9_CONFIG_HOME, else
$XDG_CONFIG_HOME/mq9, else ~/.config/mq9, readable by their owner only.`,
    );

  context
    .command("add")
    .description("save a context (the first one saved is selected)")
    .argument("<name>", "letters, digits, '_', '.' and '-'")
    .requiredOption("-s, --server <url>", "the broker: mq9://host[:port], mq9s://, nats:// or tls://")
    .option("--token <token>", "the broker's token")
    .option("--user <user>", "the broker's user")
    .option("--password <password>", "the user's password")
    .option("--nkey-seed <file>", "a file holding an NKey user's seed (the file's path is saved)")
    .option("--tls-ca <file>", "CA (PEM) that signed the broker's TLS certificate")
    .option("--http <url>", "the broker's HTTP server, when --server cannot tell (a proxy, a cluster)")
    .option("--description <text>", "what this broker is")
    .option("--select", "select it ('mq9 context use')")
    .option("--force", "replace a context of that name")
    .addOption(new Option("--json", "print the saved context as JSON"))
    .exitOverride(usageExit)
    .addHelpText(
      "after",
      `
Examples:
  mq9 context add local --server mq9://127.0.0.1:4332 --description "my laptop"
  mq9 context add prod --server mq9s://mq9.example.com --token "$PROD_TOKEN" --select`,
    )
    .action((name: string, flags: AddFlags & OutputFlags) =>
      run(flags, (store) => {
        checkContextName(name);
        if (store.has(name) && !flags.force) {
          throw new UsageError(`context '${name}' exists: pass --force to replace it`);
        }
        const saved = contextFrom(flags);
        const first = store.names().length === 0 && store.selectedName() === undefined;
        const file = store.write(name, saved);
        if (flags.select || first) store.select(name);
        if (flags.json) printJson(publicView(store, name, saved));
        else {
          process.stdout.write(`saved context ${name} (${saved.server}) in ${file}\n`);
          if (flags.select || first) process.stdout.write(`using context ${name}\n`);
        }
      }),
    );

  context
    .command("use")
    .description("select a context: commands use it when nothing else names the broker")
    .argument("<name>")
    .option("--json", "print the selected context as JSON")
    .exitOverride(usageExit)
    .action((name: string, flags: OutputFlags) =>
      run(flags, (store) => {
        const chosen = store.select(name);
        if (flags.json) printJson(publicView(store, name, chosen));
        else process.stdout.write(`using context ${name} (${chosen.server})\n`);
      }),
    );

  context
    .command("ls")
    .description("the saved contexts; the selected one is marked *")
    .option("--json", "one JSON object per context")
    .exitOverride(usageExit)
    .action((flags: OutputFlags) =>
      run(flags, (store) => {
        const names = store.names();
        const selected = store.selectedName();
        if (flags.json) {
          for (const name of names) printJson(publicView(store, name, store.read(name)));
          return;
        }
        if (names.length === 0) {
          process.stdout.write("(no contexts; add one with: mq9 context add <name> --server <url>)\n");
          return;
        }
        printTable(
          ["NAME", "SERVER", "HTTP", "AUTH", "DESCRIPTION"],
          names.map((name) => {
            const c = store.read(name);
            return [
              `${name}${name === selected ? " *" : ""}`,
              c.server,
              c.http ?? "-",
              authSummary(c),
              c.description ?? "",
            ];
          }),
        );
        if (selected !== undefined && !names.includes(selected)) {
          say(`the selected context '${selected}' does not exist; pick one with: mq9 context use <name>`);
        }
      }),
    );

  context
    .command("show")
    .description("one context (default: the selected one), without its secrets")
    .argument("[name]")
    .option("--json", "as one JSON object")
    .exitOverride(usageExit)
    .action((name: string | undefined, flags: OutputFlags) =>
      run(flags, (store) => {
        const shown = name === undefined ? store.selected() : store.read(name);
        if (shown === undefined) {
          throw new UsageError("no context is selected: name one, or select one with mq9 context use <name>");
        }
        const view = publicView(store, shown.name, shown);
        if (flags.json) {
          printJson(view);
          return;
        }
        const rows: Array<[string, unknown]> = [
          ["name", `${shown.name}${view.selected ? " (selected)" : ""}`],
          ["server", shown.server],
          ["http", shown.http],
          ["auth", view.auth],
          ["tls ca", shown.tls_ca],
          ["description", shown.description],
          ["file", view.file],
        ];
        for (const [label, value] of rows) {
          if (value !== undefined) process.stdout.write(`${`${label}:`.padEnd(13)}${String(value)}\n`);
        }
      }),
    );

  context
    .command("rm")
    .description("delete a context (and the selection, when it is the selected one)")
    .argument("<name>")
    .option("--json", "print what was removed as JSON")
    .exitOverride(usageExit)
    .action((name: string, flags: OutputFlags) =>
      run(flags, (store) => {
        store.remove(name);
        if (flags.json) printJson({ removed: name });
        else process.stdout.write(`removed context ${name}\n`);
      }),
    );
}
