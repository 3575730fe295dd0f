import { readFileSync } from "node:fs";
import { type ConnectOptions, connect, DEFAULT_SERVER, type Mq9Client, Mq9Error } from "@mq9/client";
import { type Command, InvalidArgumentError, Option } from "commander";
import { contextOption, fillFromContext } from "./context-defaults.js";
import { exitAfterOutput } from "./exit.js";
import { printError, say } from "./output.js";
import { UsageError } from "./usage-error.js";

export { UsageError };

/** Exit codes scripts can rely on. */
export const ExitCode = {
  ok: 0,
  /** The broker answered with an error (unknown mailbox, bad name, …). */
  brokerError: 1,
  /** Bad arguments or options. */
  usage: 2,
  /** No broker reachable, connection lost, refused credentials or no reply in time. */
  connection: 3,
} as const;

/** The options every client command takes, as commander parses them. */
export interface ConnectionFlags {
  server: string;
  token?: string;
  user?: string;
  password?: string;
  /** A file holding an NKey user's seed. */
  nkeySeed?: string;
  tlsCa?: string;
  timeout: number;
  json?: boolean;
  verbose?: boolean;
}

/** Parses a whole number ≥ `min` for commander, so that bad input is a usage error (exit 2). */
export function integer(name: string, min = 0): (raw: string) => number {
  return (raw) => {
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isSafeInteger(value) || value < min) {
      throw new InvalidArgumentError(`${name} must be a whole number >= ${min}, got '${raw}'`);
    }
    return value;
  };
}

/** Which setting gave a value, in the words a person would type. */
function sourceName(flag: string, env: string, source: string | undefined, context?: string): string {
  if (source === "env") return env;
  if (source === "cli") return flag;
  if (source === "config" && context !== undefined) return `context '${context}'`;
  return "the default";
}

/**
 * Adds --server (env MQ9_SERVER), credentials, --timeout, --json and --verbose to a command, and
 * makes commander's usage errors exit with code 2.
 */
export function clientCommand(command: Command): Command {
  return command
    .addOption(
      new Option("-s, --server <url>", "broker: mq9://host[:port], mq9s://, nats:// or tls://")
        .env("MQ9_SERVER")
        .default(DEFAULT_SERVER),
    )
    .addOption(new Option("--token <token>", "auth token").env("MQ9_TOKEN"))
    .addOption(new Option("--user <user>", "auth user").env("MQ9_USER"))
    .addOption(new Option("--password <password>", "auth password").env("MQ9_PASSWORD"))
    .addOption(
      new Option("--nkey-seed <file>", "sign in as an NKey user: a file holding its seed (SU…)").env(
        "MQ9_NKEY_SEED",
      ),
    )
    .option("--tls-ca <file>", "CA (PEM) that signed the broker's TLS certificate")
    .option("--timeout <ms>", "request timeout", integer("--timeout", 1), 5_000)
    .option("--json", "machine-readable output (JSON)")
    .option("-v, --verbose", "say which broker the command uses (on stderr)")
    .addOption(contextOption())
    .hook("preAction", (_hooked, action) => {
      const context = fillFromContext(action);
      const flags = action.opts<ConnectionFlags>();
      if (!flags.verbose) return;
      const from = sourceName("--server", "MQ9_SERVER", action.getOptionValueSource("server"), context?.name);
      say(`broker ${flags.server} (${from})`);
    })
    .exitOverride(usageExit);
}

/** Commander's own errors (unknown option, missing argument) are usage errors; help is success. */
export function usageExit(err: { exitCode: number }): never {
  process.exit(err.exitCode === 0 ? ExitCode.ok : ExitCode.usage);
}

/** Connect options from the shared connection flags; `name` is what the broker sees. */
export function connectOptions(flags: ConnectionFlags, reconnect: boolean, name = "mq9-cli"): ConnectOptions {
  const options: ConnectOptions = {
    name,
    requestTimeoutMs: flags.timeout,
    connectTimeoutMs: flags.timeout,
    reconnect,
  };
  if (flags.token) options.token = flags.token;
  if (flags.user) {
    options.user = flags.user;
    options.password = flags.password ?? "";
  }
  if (flags.nkeySeed) options.nkeySeed = readSeedFile(flags.nkeySeed);
  if (flags.tlsCa) options.tls = { ca: readFlagFile("--tls-ca", flags.tlsCa) };
  return options;
}

/** A file an option names (a context may name one that has gone since): unreadable is a usage error. */
function readFlagFile(flag: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(err as Error).message}`);
  }
}

/** The seed in an NKey seed file (as `nk -gen user` writes it, or a nats CLI `.nk` file). */
function readSeedFile(file: string): string {
  const text = readFlagFile("--nkey-seed", file);
  // A .creds-style file may hold other lines; the seed is the one that starts with SU.
  const seed = text.split(/\r?\n/).find((line) => line.trim().startsWith("SU"));
  if (seed === undefined) {
    throw new UsageError(`--nkey-seed: ${file} holds no NKey user seed (a line starting with SU)`);
  }
  return seed.trim();
}

/** Prints the error the way the output mode asks and returns the exit code for it. */
export function reportError(err: unknown, json: boolean | undefined): number {
  let code: number = ExitCode.brokerError;
  let kind = "ERROR";
  if (err instanceof UsageError) {
    code = ExitCode.usage;
    kind = "USAGE";
  } else if (err instanceof Mq9Error) {
    kind = err.code;
    if (err.code === "NOT_CONNECTED" || err.code === "TIMEOUT") code = ExitCode.connection;
  } else if ((err as { code?: string }).code === "ENOENT") {
    code = ExitCode.usage;
    kind = "USAGE";
  }
  const message = err instanceof Error ? err.message : String(err);
  printError(message, kind, json, kind !== "USAGE" && kind !== "ERROR");
  return code;
}

/**
 * Connects, runs `work`, closes, and exits with the code of the outcome. One-shot
 * commands do not reconnect (they fail fast); long-running ones pass `reconnect`.
 */
export async function withClient(
  flags: ConnectionFlags,
  work: (client: Mq9Client) => Promise<void>,
  { reconnect = false } = {},
): Promise<void> {
  let client: Mq9Client | undefined;
  let exitCode: number = ExitCode.ok;
  try {
    client = await connect(flags.server, connectOptions(flags, reconnect));
    await work(client);
  } catch (err) {
    exitCode = reportError(err, flags.json);
  } finally {
    await client?.close().catch(() => {});
  }
  await exitAfterOutput(exitCode);
}
