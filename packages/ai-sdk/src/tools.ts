import {
  type Mq9ToolsOptions,
  parseToolArguments,
  runTool,
  selectTools,
  strictJsonSchema,
  ToolArgumentsError,
} from "@mq9/tools";
import { jsonSchema, type Tool, tool } from "ai";

/**
 * The mq9 tools as AI SDK tools, keyed by name, for `generateText`/`streamText`'s `tools` or
 * a `ToolLoopAgent`. The model sees the same names, descriptions and JSON schemas as over
 * MCP; arguments are checked with the same schema before anything reaches the broker.
 */
export function mq9Tools(options: Mq9ToolsOptions): Record<string, Tool> {
  const { tools, context } = selectTools(options);
  return Object.fromEntries(
    tools.map((definition) => [
      definition.name,
      tool({
        title: definition.title,
        description: definition.description,
        inputSchema: jsonSchema<Record<string, unknown>>(strictJsonSchema(definition.input) as object, {
          validate: (value) => {
            try {
              return { success: true, value: parseToolArguments(definition, value) };
            } catch (err) {
              if (err instanceof ToolArgumentsError) return { success: false, error: err };
              throw err;
            }
          },
        }),
        execute: (args: Record<string, unknown>, { abortSignal }) =>
          runTool(definition, args, context, abortSignal),
      }),
    ]),
  );
}
