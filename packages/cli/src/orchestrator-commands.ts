import type { Command } from "commander";
import { registerAgentList } from "./agent-list-command.js";
import { registerTask } from "./task-command.js";
import { registerTemplates } from "./templates-command.js";
import { registerTrace } from "./trace-command.js";

/** The orchestrator's commands: task, trace, agent list, templates. Register after the client commands. */
export function registerOrchestratorCommands(program: Command): void {
  registerTask(program);
  registerTrace(program);
  registerAgentList(program);
  registerTemplates(program);
}
