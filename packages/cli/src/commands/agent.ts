import type { Command } from "commander";
import { usageExit } from "../shared/client-command.js";
import { registerAgentImport } from "./agent/import.js";
import { registerAgentList } from "./agent/list.js";
import { registerRegistryCommands } from "./agent/registry.js";
import { registerAgentServe } from "./agent/serve.js";

/** `mq9 agent …`: the registry (register, discover, …), the orchestrator's view, import, serve. */
export function registerAgent(program: Command): void {
  const agent = program
    .command("agent")
    .description("the agent registry: register, report, discover")
    .exitOverride(usageExit);
  registerRegistryCommands(agent);
  registerAgentList(agent);
  registerAgentImport(agent);
  registerAgentServe(agent);
}
