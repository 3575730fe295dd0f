import { encodeReply, Mq9Error, type ReplyBody } from "@mq9/protocol";
import type { Principal } from "../../auth/principal.js";
import type { Mq9Service } from "../../service/mq9-service.js";

const encoder = new TextEncoder();

/**
 * Runs one mq9 request through the same service the NATS listener uses and returns its reply as
 * JSON (the wire form, base64 payloads and all), or throws the protocol's error.
 */
export async function callMq9(
  service: Mq9Service,
  subject: string,
  body: unknown,
  options: { header?: Uint8Array; raw?: Uint8Array; signal?: AbortSignal; principal?: Principal } = {},
): Promise<Record<string, unknown>> {
  const payload = options.raw ?? encoder.encode(body === undefined ? "" : JSON.stringify(body));
  const { header, signal, principal } = options;
  const reply = await service.handle({ subject, payload, header, signal, principal });
  if (reply.error !== "") throw Mq9Error.fromReply(reply.error, reply.code);
  return replyJson(reply);
}

/** A reply as its wire JSON (messages as MessageItems, payloads in base64), without `error`. */
export function replyJson(reply: ReplyBody): Record<string, unknown> {
  // A JSON body over HTTP: payloads stay base64 whatever the FETCH asked.
  const encoded = encodeReply(reply.rawPayloads ? { ...reply, rawPayloads: false } : reply);
  const text =
    typeof encoded === "string"
      ? encoded
      : encoded.map((piece) => (typeof piece === "string" ? piece : Buffer.from(piece).toString())).join("");
  const { error: _none, ...rest } = JSON.parse(text) as Record<string, unknown>;
  return rest;
}
