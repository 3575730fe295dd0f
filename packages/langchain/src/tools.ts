import { DynamicStructuredTool, type StructuredTool } from "@langchain/core/tools";
import type { JsonSchema7ObjectType } from "@langchain/core/utils/json_schema";
import { type Mq9ToolsOptions, runTool, selectTools, strictJsonSchema } from "@mq9/tools";

/**
 * The mq9 tools as LangChain tools, for `model.bindTools(…)`, a LangGraph `ToolNode` or an
 * agent. The model sees the same names, descriptions and (strict) JSON schemas as over MCP;
 * each call's arguments are checked with the same schema, and a failure throws with the
 * broker's or the agent's own words (a `ToolNode` hands them to the model).
 */
export function mq9Tools(options: Mq9ToolsOptions): StructuredTool[] {
  const { tools, context } = selectTools(options);
  return tools.map(
    (definition) =>
      new DynamicStructuredTool({
        name: definition.name,
        description: definition.description,
        schema: strictJsonSchema(definition.input) as JsonSchema7ObjectType,
        verboseParsingErrors: true,
        func: async (input, _runManager, config) =>
          JSON.stringify(await runTool(definition, input, context, config?.signal)),
      }),
  );
}
