import { Errors, Mq9Error } from "@mq9/protocol";

export type JsonObject = Record<string, unknown>;

/** A registry request the caller must fix; its message is the reply's `error` text. */
export function badRequest(text: string): Mq9Error {
  return new Mq9Error("INVALID_REQUEST", text);
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes a registry request body as one JSON object. An empty body is `{}`
 * when `emptyAsObject`, else the error `emptyText` (or a generic one).
 */
export function readJsonObject(
  body: Uint8Array,
  command: string,
  options: { emptyAsObject?: boolean; emptyText?: string } = {},
): { obj: JsonObject; json: string } {
  let text: string;
  try {
    text = decoder.decode(body).trim();
  } catch {
    throw badRequest(Errors.invalidPayload(command, "the body is not valid UTF-8; send a JSON object"));
  }
  const empty = () => {
    if (options.emptyAsObject) return { obj: {}, json: "{}" };
    throw badRequest(
      options.emptyText ?? Errors.invalidPayload(command, "the body is empty; send a JSON object"),
    );
  };
  if (text === "") return empty();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw badRequest(Errors.invalidPayload(command, `malformed JSON (${(err as Error).message})`));
  }
  // Python SDKs send the JSON string "" for an empty body.
  if (value === null || value === "") return empty();
  if (typeof value !== "object" || Array.isArray(value)) {
    throw badRequest(Errors.invalidPayload(command, "expected a JSON object"));
  }
  return { obj: value as JsonObject, json: text };
}
