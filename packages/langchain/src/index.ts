/**
 * `@mq9/langchain` — mq9 for LangChain.js and LangGraph.js (`@langchain/core` 1.x): the mq9
 * tools (mailboxes, messages, the agent registry, A2A calls) as LangChain tools, and a
 * LangGraph graph served as an A2A agent on an mq9 mailbox. `@langchain/core` is a peer
 * dependency.
 *
 * @example
 * ```ts
 * import { ToolNode } from "@langchain/langgraph/prebuilt";
 * import { connect } from "@mq9/client";
 * import { mq9Tools, serveGraph } from "@mq9/langchain";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const tools = mq9Tools({ client });
 * const model = chatModel.bindTools(tools); // any LangChain chat model
 * const toolNode = new ToolNode(tools);
 * // … build and compile a graph with them, then serve it:
 * await serveGraph(client, graph, { card: { name: "Planner", description: "Plans and delegates." } });
 * ```
 *
 * @module
 */

export type { Mq9ToolsOptions } from "@mq9/tools";
export { type InvocableGraph, type ServeGraphOptions, serveGraph } from "./serve-graph.js";
export { mq9Tools } from "./tools.js";
