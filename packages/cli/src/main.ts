#!/usr/bin/env node
import { Command } from "commander";
import { registerAgentImport } from "./agent-import.js";
import { registerAgentServe } from "./agent-serve-command.js";
import { registerClientCommands } from "./client-commands.js";
import { registerMcp } from "./mcp-command.js";
import { registerModels } from "./models-command.js";
import { registerOrchestratorCommands } from "./orchestrator-commands.js";
import { registerServe } from "./serve.js";
import { cliVersion } from "./version.js";

const program = new Command()
  .name("mq9")
  .description("mq9 — the asynchronous communication broker for AI agents")
  .version(cliVersion(), "-V, --version", "print the version of mq9")
  .showHelpAfterError();

registerServe(program);
registerClientCommands(program);
registerOrchestratorCommands(program);
registerAgentImport(program);
registerAgentServe(program);
registerModels(program);
registerMcp(program);

await program.parseAsync(process.argv);
