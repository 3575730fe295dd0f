import { serveTextAgent, type TextAgentOptions } from "@mq9/agent/a2a";
import type { Mq9Client } from "@mq9/client";
import type { A2AAgent } from "@mq9/client/a2a";
import { type Agent, type AgentInputItem, assistant, Runner, user } from "@openai/agents-core";

/** Options of `serveAgent`. */
export interface ServeAgentOptions extends Omit<TextAgentOptions, "answer" | "card"> {
  /** The A2A card (default: the agent's name, and its handoffDescription as the description). */
  card?: TextAgentOptions["card"];
  /** Runs the agent (default: a new Runner with its defaults). */
  runner?: Runner;
  /** Turns per task (default: the runner's). */
  maxTurns?: number;
}

/**
 * Serves an OpenAI Agents SDK `Agent` as an A2A agent on an mq9 mailbox: each task's
 * conversation is run with the runner, its final output comes back as the task's result; a
 * failure fails the task, a cancel aborts the run. Registered and heartbeated while the
 * process runs; tasks sent while it is down wait in the mailbox.
 */
export function serveAgent(
  client: Mq9Client,
  // biome-ignore lint/suspicious/noExplicitAny: any agent, whatever its context and output types
  agent: Agent<any, any>,
  options: ServeAgentOptions = {},
): Promise<A2AAgent> {
  const runner = options.runner ?? new Runner();
  return serveTextAgent(client, {
    ...options,
    card: options.card ?? { name: agent.name, description: agent.handoffDescription || agent.name },
    answer: async ({ text, history, signal }) => {
      const input: AgentInputItem[] = [
        ...history.map((m) => (m.role === "agent" ? assistant(m.text) : user(m.text))),
        user(text),
      ];
      const result = await runner.run(agent, input, { signal, maxTurns: options.maxTurns });
      const output = result.finalOutput;
      return typeof output === "string" ? output : JSON.stringify(output ?? null);
    },
  });
}
