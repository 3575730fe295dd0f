export { type McpRoutesOptions, mountMcp } from "./http-routes.js";
export { createMcpServer, SERVER_INFO } from "./mcp-server.js";
export { type McpStdioOptions, serveMcpStdio } from "./stdio.js";
export { strictJsonSchema } from "./strict-schema.js";
export { SharedToolContext } from "./tool-context.js";
export { TOOLS, type ToolContext, type ToolDefinition } from "./tools.js";
