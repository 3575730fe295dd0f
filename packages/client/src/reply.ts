import { Mq9Error } from "@mq9/protocol";

const decoder = new TextDecoder();

/** Parses a reply envelope; a non-empty `error` becomes an Mq9Error with the broker's text. */
export function parseReply<T extends object>(data: Uint8Array, subject: string): T {
  let reply: unknown;
  try {
    reply = JSON.parse(decoder.decode(data));
  } catch {
    throw new Mq9Error("INTERNAL", `${subject}: the reply is not JSON; is this an mq9 broker?`);
  }
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) {
    throw new Mq9Error("INTERNAL", `${subject}: the reply is not a JSON object; is this an mq9 broker?`);
  }
  const error = (reply as { error?: unknown }).error;
  if (typeof error === "string" && error !== "") throw Mq9Error.fromReply(error);
  return reply as T;
}

/** The error for a success reply that lacks a field every mq9 broker sends. */
export function malformed(subject: string, field: string): Mq9Error {
  return new Mq9Error("INTERNAL", `${subject}: the reply has no valid '${field}'; is this an mq9 broker?`);
}
