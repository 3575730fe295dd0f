/**
 * `@mq9/agent/a2a` — an A2A agent on an mq9 mailbox from a function that answers in text:
 * what the framework adapters (`@mq9/langchain`, `@mq9/ai-sdk`, `@mq9/openai-agents`) serve
 * a graph or an agent with. Needs `@a2a-js/sdk` installed beside it.
 *
 * @example
 * ```ts
 * import { serveTextAgent } from "@mq9/agent/a2a";
 * import { connect } from "@mq9/client";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const agent = await serveTextAgent(client, {
 *   card: { name: "Shouter", description: "Repeats what it is told, louder." },
 *   answer: ({ text }) => text.toUpperCase(),
 * });
 * await agent.stop(); // unregisters and lets running tasks finish
 * ```
 *
 * @module
 */
export {
  type AnswerFunction,
  serveTextAgent,
  TextAgentExecutor,
  type TextAgentOptions,
  type TextAnswer,
  type TextTurn,
} from "./text-agent.js";
