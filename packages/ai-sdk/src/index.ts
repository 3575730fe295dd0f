/**
 * `@mq9/ai-sdk` — mq9 for the Vercel AI SDK (`ai` 6): the mq9 tools (mailboxes, messages,
 * the agent registry, A2A calls) as AI SDK tools, and an AI SDK agent served as an A2A agent
 * on an mq9 mailbox. `ai` is a peer dependency.
 *
 * @example
 * ```ts
 * import { mq9Tools } from "@mq9/ai-sdk";
 * import { connect } from "@mq9/client";
 * import { generateText, stepCountIs } from "ai";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const { text } = await generateText({
 *   model, // any AI SDK model
 *   tools: mq9Tools({ client }),
 *   stopWhen: stepCountIs(5),
 *   prompt: "Find an agent that translates to French and ask it to translate 'good morning'.",
 * });
 * ```
 *
 * @module
 */

export type { Mq9ToolsOptions } from "@mq9/tools";
export { type GeneratingAgent, type ServeAgentOptions, serveAgent } from "./serve-agent.js";
export { mq9Tools } from "./tools.js";
