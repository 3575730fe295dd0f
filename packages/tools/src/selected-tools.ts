import type { Mq9Client } from "@mq9/client";
import { A2AClient } from "@mq9/client/a2a";
import { TOOLS, type ToolContext, type ToolDefinition } from "./tools.js";

/** What every framework adapter's `mq9Tools` takes. */
export interface Mq9ToolsOptions {
  /** A connected client (`connect("mq9://…")`); the tools use it and never close it. */
  client: Mq9Client;
  /** For mq9_call_agent (default: one made on this client, its reply mailbox opened on first use). */
  a2a?: A2AClient;
  /** Only these tools, by name (default: all of them). */
  tools?: string[];
}

/** The tools an adapter's options ask for, and the context they run in; an unknown name throws. */
export function selectTools(options: Mq9ToolsOptions): { tools: ToolDefinition[]; context: ToolContext } {
  const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));
  const names = options.tools ?? [...byName.keys()];
  const unknown = names.filter((name) => !byName.has(name));
  if (unknown.length > 0) {
    throw new TypeError(
      `unknown mq9 tool ${unknown.map((n) => `'${n}'`).join(", ")}; the tools are ${[...byName.keys()].join(", ")}`,
    );
  }
  return {
    tools: names.map((name) => byName.get(name)!),
    context: { client: options.client, a2a: options.a2a ?? new A2AClient(options.client) },
  };
}
