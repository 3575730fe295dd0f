import { DynamicStructuredTool, type StructuredTool } from "@langchain/core/tools";
import type { JsonSchema7ObjectType } from "@langchain/core/utils/json_schema";
import { lenientJsonSchema, type Mq9ToolsOptions, runTool, selectTools } from "@mq9/tools";

/**
 * The mq9 tools as LangChain tools, for `model.bindTools(…)`, a LangGraph `ToolNode` or an
 * agent. The model sees the same names, descriptions and argument schemas as over MCP, with
 * only the required arguments in `required`: LangChain checks each call against the schema it
 * shows, and a model may leave an optional argument out. The arguments are checked again with
 * the tool's zod schema, and a failure throws with the broker's or the agent's own words (a
 * `ToolNode` hands them to the model).
 */
export function mq9Tools(options: Mq9ToolsOptions): StructuredTool[] {
  const { tools, context } = selectTools(options);
  return tools.map(
    (definition) =>
      new DynamicStructuredTool({
        name: definition.name,
        description: definition.description,
        schema: lenientJsonSchema(definition.input) as JsonSchema7ObjectType,
        verboseParsingErrors: true,
        func: async (input, _runManager, config) =>
          JSON.stringify(await runTool(definition, input, context, config?.signal)),
      }),
  );
}
