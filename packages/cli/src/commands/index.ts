// The top-level verbs of `mq9`, each registered by one module that owns the whole verb
// (`agent` and all its subcommands, say). A verb's module, and with it the packages it needs
// (the broker for serve, the client SDK for send, …), is imported only when that verb runs or
// when help lists every verb: a command line pays for what it uses.
import type { Command } from "commander";

/** Adds one verb, with its options and subcommands, to the program. */
export type RegisterVerb = (program: Command) => void;

interface Verb {
  name: string;
  load(): Promise<RegisterVerb>;
}

/** In the order help lists them. */
export const VERBS: readonly Verb[] = [
  { name: "serve", load: async () => (await import("./serve.js")).registerServe },
  { name: "mailbox", load: async () => (await import("./mailbox.js")).registerMailbox },
  { name: "group", load: async () => (await import("./group.js")).registerGroup },
  { name: "dlq", load: async () => (await import("./dlq.js")).registerDlq },
  { name: "send", load: async () => (await import("./send.js")).registerSend },
  { name: "fetch", load: async () => (await import("./fetch.js")).registerFetch },
  { name: "ack", load: async () => (await import("./ack.js")).registerAck },
  { name: "query", load: async () => (await import("./query.js")).registerQuery },
  { name: "delete", load: async () => (await import("./delete.js")).registerDelete },
  { name: "consume", load: async () => (await import("./consume.js")).registerConsume },
  { name: "agent", load: async () => (await import("./agent.js")).registerAgent },
  { name: "task", load: async () => (await import("./task.js")).registerTask },
  { name: "trace", load: async () => (await import("./trace.js")).registerTrace },
  { name: "templates", load: async () => (await import("./templates.js")).registerTemplates },
  { name: "models", load: async () => (await import("./models.js")).registerModels },
  { name: "mcp", load: async () => (await import("./mcp.js")).registerMcp },
  { name: "cluster", load: async () => (await import("./cluster.js")).registerCluster },
  { name: "context", load: async () => (await import("./context.js")).registerContext },
  { name: "server", load: async () => (await import("./server.js")).registerServer },
];

const VERSION_FLAGS = new Set(["-V", "--version"]);

/**
 * The verbs a command line needs registered: the one it names (`mq9 help <verb>` too); none
 * for `mq9 --version`; all of them for help, a bare `mq9` and an unknown verb (so that the
 * error can suggest the nearest one).
 */
export function verbsFor(args: readonly string[]): readonly Verb[] {
  const words = args.filter((arg) => !arg.startsWith("-"));
  const named = words[0] === "help" ? words[1] : words[0];
  if (named === undefined) return args.some((arg) => VERSION_FLAGS.has(arg)) ? [] : VERBS;
  const verb = VERBS.find((v) => v.name === named);
  return verb ? [verb] : VERBS;
}

/** Registers the verbs `args` (the arguments after `mq9`) need. */
export async function registerVerbs(program: Command, args: readonly string[]): Promise<void> {
  const verbs = verbsFor(args);
  const registrations = await Promise.all(verbs.map((verb) => verb.load()));
  for (const register of registrations) register(program);
}
