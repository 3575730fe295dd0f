import * as z from "zod";

type JsonSchema = Record<string, unknown> & { properties?: Record<string, unknown>; required?: string[] };

/**
 * The tool's JSON Schema in OpenAI strict form: every property listed as required
 * (optional ones accept null), no additional properties. Validation stays lenient:
 * hosts that leave an optional argument out are accepted too.
 */
export function strictJsonSchema(schema: z.ZodObject): JsonSchema {
  const json = z.toJSONSchema(schema, { io: "input", target: "draft-7" }) as JsonSchema;
  delete json.$schema;
  json.required = Object.keys(json.properties ?? {});
  json.additionalProperties = false;
  return json;
}
