#!/usr/bin/env node
/**
 * `mq9` — the command line of the mq9 broker: `mq9 serve` runs the broker with every app in one
 * process; the other verbs talk to a running broker (mailboxes, messages, the agent registry,
 * the orchestrator's tasks).
 *
 * @example
 * ```sh
 * mq9 serve &
 * mq9 mailbox create agents.demo --ttl 3600
 * mq9 send agents.demo "hello"
 * mq9 fetch agents.demo --group demo
 * ```
 */
import { Command } from "commander";
import { registerVerbs } from "./commands/index.js";
import { usageExit } from "./shared/client-command.js";
import { cliVersion } from "./shared/version.js";

// A reader that stops early (`mq9 query … | head -1`) closes the pipe: that ends the command, quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
}

const program = new Command()
  .name("mq9")
  .description("mq9 — the asynchronous communication broker for AI agents")
  .version(cliVersion(), "-V, --version", "print the version of mq9")
  // An argument error prints itself and where to read more, not the whole help.
  .showHelpAfterError("(see 'mq9 <command> --help')")
  .exitOverride(usageExit);

await registerVerbs(program, process.argv.slice(2));
await program.parseAsync(process.argv);
