import { type Command, Option } from "commander";
import { ContextStore, type NamedContext, type SavedContext } from "./contexts.js";
import { printError } from "./output.js";
import { UsageError } from "./usage-error.js";

/** A context field and the option (attribute name) it fills. */
const FILLS: ReadonlyArray<[keyof SavedContext, string]> = [
  ["server", "server"],
  ["http", "http"],
  ["token", "token"],
  ["user", "user"],
  ["password", "password"],
  ["nkey_seed", "nkeySeed"],
  ["tls_ca", "tlsCa"],
];

/** `--context <name>` (env MQ9_CONTEXT), which every command that talks to a broker takes. */
export function contextOption(): Option {
  return new Option("--context <name>", "use this saved context (mq9 context ls)").env("MQ9_CONTEXT");
}

/** True when the person gave the option (a flag or its environment variable). */
function given(command: Command, option: string): boolean {
  const source = command.getOptionValueSource(option);
  return source === "cli" || source === "env";
}

/**
 * Fills the options no flag or environment variable gave from the context named by --context
 * (or MQ9_CONTEXT), else from the selected one; their source becomes `config`. The selected
 * context is left out when --server or --http (or MQ9_SERVER, MQ9_HTTP) names another broker: its
 * credentials are for its own server. A context that does not exist ends the command with exit 2.
 */
export function fillFromContext(command: Command): NamedContext | undefined {
  const json = command.getOptionValue("json") as boolean | undefined;
  try {
    const context = chosenContext(command);
    if (context === undefined) return undefined;
    for (const [field, option] of FILLS) {
      const value = context[field];
      if (value === undefined || given(command, option)) continue;
      if (!command.options.some((o) => o.attributeName() === option)) continue;
      command.setOptionValueWithSource(option, value, "config");
    }
    return context;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    printError(err.message, "USAGE", json, false);
    process.exit(2);
  }
}

function chosenContext(command: Command): NamedContext | undefined {
  const store = new ContextStore();
  const named = command.getOptionValue("context") as string | undefined;
  if (named) {
    const viaEnv = command.getOptionValueSource("context") === "env";
    return store.read(named, (n) => `${viaEnv ? "MQ9_CONTEXT: " : ""}context '${n}'`);
  }
  if (given(command, "server") || given(command, "http")) return undefined;
  return store.selected();
}
