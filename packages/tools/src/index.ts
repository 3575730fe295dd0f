/**
 * `@mq9/tools` — the mq9 tools described once: names, descriptions, zod and JSON schemas and
 * handlers (mailboxes, messages, the agent registry, A2A calls). The MCP server (`@mq9/mcp`)
 * and the framework adapters (`@mq9/langchain`, `@mq9/ai-sdk`, `@mq9/openai-agents`) turn
 * them into their own tool objects; none of them has a schema of its own.
 *
 * @example
 * ```ts
 * import { connect } from "@mq9/client";
 * import { A2AClient } from "@mq9/client/a2a";
 * import { runTool, TOOLS } from "@mq9/tools";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const send = TOOLS.find((tool) => tool.name === "mq9_send_message")!;
 * await runTool(send, { mail_address: "team.inbox", payload: "hi" }, { client, a2a: new A2AClient(client) });
 * ```
 *
 * @module
 */
export { lenientJsonSchema } from "./json-schema.js";
export { parseToolArguments, runTool, ToolArgumentsError } from "./run-tool.js";
export { type Mq9ToolsOptions, selectTools } from "./selected-tools.js";
export { strictJsonSchema } from "./strict-schema.js";
export { SharedToolContext } from "./tool-context.js";
export { TOOLS, type ToolContext, type ToolDefinition } from "./tools.js";
