import { serveTextAgent, type TextAgentOptions } from "@mq9/agent/a2a";
import type { Mq9Client } from "@mq9/client";
import type { A2AAgent } from "@mq9/client/a2a";
import type { ModelMessage } from "ai";

/** What is served: an AI SDK `Agent` (`ToolLoopAgent`) or anything that generates alike. */
export interface GeneratingAgent {
  generate(options: { messages: ModelMessage[]; abortSignal?: AbortSignal }): PromiseLike<{ text: string }>;
}

/** Options of `serveAgent`: the card and the mailbox's settings (`TextAgentOptions` less `answer`). */
export type ServeAgentOptions = Omit<TextAgentOptions, "answer">;

/**
 * Serves an AI SDK agent as an A2A agent on an mq9 mailbox: each task's conversation goes
 * to `agent.generate`, its text comes back as the task's result; a failure fails the task,
 * a cancel aborts the generation. Registered and heartbeated while the process runs; tasks
 * sent while it is down wait in the mailbox.
 */
export function serveAgent(
  client: Mq9Client,
  agent: GeneratingAgent,
  options: ServeAgentOptions,
): Promise<A2AAgent> {
  return serveTextAgent(client, {
    ...options,
    answer: async ({ text, history, signal }) => {
      const messages: ModelMessage[] = [
        ...history.map(
          (m) => ({ role: m.role === "agent" ? "assistant" : "user", content: m.text }) as const,
        ),
        { role: "user", content: text },
      ];
      const result = await agent.generate({ messages, abortSignal: signal });
      return result.text;
    },
  });
}
