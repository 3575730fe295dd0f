/**
 * `@mq9/openai-agents` — mq9 for the OpenAI Agents SDK for JS (`@openai/agents` 0.14): the mq9
 * tools (mailboxes, messages, the agent registry, A2A calls) as function tools, and an
 * `Agent` served as an A2A agent on an mq9 mailbox. `@openai/agents-core` is a peer
 * dependency (`@openai/agents` brings it).
 *
 * @example
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { connect } from "@mq9/client";
 * import { mq9Tools, serveAgent } from "@mq9/openai-agents";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const planner = new Agent({ name: "Planner", instructions: "Delegate with mq9.", tools: mq9Tools({ client }) });
 * console.log((await run(planner, "Find a translator and have it translate 'good morning'.")).finalOutput);
 * await serveAgent(client, planner, { card: { name: "Planner", description: "Plans and delegates." } });
 * ```
 *
 * @module
 */

export type { Mq9ToolsOptions } from "@mq9/tools";
export { type ServeAgentOptions, serveAgent } from "./serve-agent.js";
export { type Mq9FunctionTool, mq9Tools } from "./tools.js";
