import { type Mq9ToolsOptions, runTool, selectTools, strictJsonSchema } from "@mq9/tools";
import { type FunctionTool, tool } from "@openai/agents-core";

type StrictParameters = {
  type: "object";
  properties: Record<string, never>;
  required: never[];
  additionalProperties: false;
};

/** One mq9 tool as the Agents SDK holds it: strict JSON-schema parameters. */
export type Mq9FunctionTool = FunctionTool<unknown, StrictParameters, unknown>;

/**
 * The mq9 tools as OpenAI Agents SDK function tools, for an `Agent`'s `tools`. The model sees
 * the same names, descriptions and (strict) JSON schemas as over MCP; the arguments are
 * checked with the same schema, and a failure goes back to the model as the broker's or the
 * agent's own words.
 */
export function mq9Tools(options: Mq9ToolsOptions): Mq9FunctionTool[] {
  const { tools, context } = selectTools(options);
  return tools.map((definition) =>
    tool({
      name: definition.name,
      description: definition.description,
      parameters: strictJsonSchema(definition.input) as StrictParameters,
      strict: true,
      execute: (input, _runContext, details) =>
        runTool(definition, input, context, details?.signal).then((result) => JSON.stringify(result)),
      errorFunction: (_runContext, error) => (error instanceof Error ? error.message : String(error)),
    }),
  );
}
