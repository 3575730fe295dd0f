import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** A tool's JSON result: as text for every host, and as structuredContent for those that read it. */
export function ok(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

/** A failure the model should see and can act on: the broker's or agent's own words. */
export function failure(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}
