import type { ToolContext, ToolDefinition } from "./tools.js";

/** Arguments that do not fit a tool's schema; the message names each problem, for the model to fix. */
export class ToolArgumentsError extends Error {
  readonly code = "INVALID_ARGUMENTS";

  constructor(
    readonly tool: string,
    readonly problems: string[],
  ) {
    super(`invalid arguments for ${tool}: ${problems.join("; ")}`);
    this.name = "ToolArgumentsError";
  }
}

/** The arguments checked against the tool's schema (nullish optional ones stay as given). */
export function parseToolArguments(tool: ToolDefinition, args: unknown): Record<string, unknown> {
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) {
    throw new ToolArgumentsError(
      tool.name,
      parsed.error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`),
    );
  }
  return parsed.data as Record<string, unknown>;
}

/**
 * Checks the arguments, then runs the tool: what every adapter's tool does. Bad arguments
 * throw `ToolArgumentsError` before anything reaches the broker.
 */
export async function runTool(
  tool: ToolDefinition,
  args: unknown,
  context: ToolContext,
  signal: AbortSignal = new AbortController().signal,
): Promise<Record<string, unknown>> {
  return tool.run(parseToolArguments(tool, args), context, signal);
}
