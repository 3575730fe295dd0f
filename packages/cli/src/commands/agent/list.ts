import type { Command } from "commander";
import { ExitCode } from "../../shared/client-command.js";
import { type ApiFlags, apiCommand, duration, withApi } from "../../shared/orchestrator-api.js";
import { printJson, printTable } from "../../shared/output.js";

interface AgentRow {
  name: string;
  mailbox: string;
  alive: boolean;
  orchestrated: boolean;
  capabilities: string[];
  weight: number;
  max_concurrency: number;
  load: number;
  last_seen: number;
}

/** `mq9 agent list`: the registry as the orchestrator sees it, with load and liveness. */
export function registerAgentList(agent: Command): void {
  apiCommand(agent.command("list"))
    .description("agents with their capabilities, load and liveness, as the orchestrator routes to them")
    .action((flags: ApiFlags) =>
      withApi(flags, async (api) => {
        const { agents } = await api.call<{ agents: AgentRow[] }>("GET", "/api/agents");
        if (flags.json) {
          for (const a of agents) printJson(a);
        } else if (agents.length === 0) {
          process.stdout.write("(no agents)\n");
        } else {
          const now = Date.now();
          printTable(
            ["NAME", "STATE", "LOAD", "WEIGHT", "SEEN", "CAPABILITIES"],
            agents.map((a) => [
              a.name,
              a.alive ? "online" : "offline",
              a.orchestrated ? `${a.load}/${a.max_concurrency}` : "-",
              String(a.weight),
              `${duration(Math.max(0, now - a.last_seen))} ago`,
              a.capabilities.join(", ") || "-",
            ]),
          );
        }
        return ExitCode.ok;
      }),
    );
}
