import * as z from "zod";

type JsonSchema = Record<string, unknown> & { properties?: Record<string, unknown>; required?: string[] };

/**
 * The tool's JSON Schema as its zod schema says: only the required arguments listed in
 * `required` (optional ones accept null or may be left out), no additional properties. For
 * frameworks that validate calls against the schema they show the model (LangChain), where
 * the strict form would refuse a call that leaves an optional argument out.
 */
export function lenientJsonSchema(schema: z.ZodObject): JsonSchema {
  const json = z.toJSONSchema(schema, { io: "input", target: "draft-7" }) as JsonSchema;
  delete json.$schema;
  json.required ??= [];
  json.additionalProperties = false;
  return json;
}
