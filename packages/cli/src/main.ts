#!/usr/bin/env node
import { Command } from "commander";
import { registerAgentImport } from "./agent-import.js";
import { registerClientCommands } from "./client-commands.js";
import { registerModels } from "./models-command.js";
import { registerServe } from "./serve.js";

const program = new Command()
  .name("mq9")
  .description("mq9 — the asynchronous communication broker for AI agents")
  .version("0.1.0")
  .showHelpAfterError();

registerServe(program);
registerClientCommands(program);
registerAgentImport(program);
registerModels(program);

await program.parseAsync(process.argv);
