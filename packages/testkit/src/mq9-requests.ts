// mq9 requests from a plain `nats` client, as any NATS client speaks the protocol.
import { type NatsConnection, headers as natsHeaders } from "nats";

/** A request body: JSON, raw text, raw bytes or nothing. */
export type Body = Record<string, unknown> | string | Uint8Array | undefined;

export interface Mq9RequestOptions {
  headers?: Record<string, string>;
  timeout?: number;
}

export function encodeBody(body: Body): Uint8Array {
  if (body === undefined) return new Uint8Array();
  if (body instanceof Uint8Array) return body;
  return new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
}

/** One mq9 request with optional headers; the reply's JSON. */
export async function mq9Request<T = Record<string, unknown>>(
  nc: NatsConnection,
  subject: string,
  body: Body,
  options: Mq9RequestOptions = {},
): Promise<T & { error: string }> {
  let hdrs: ReturnType<typeof natsHeaders> | undefined;
  if (options.headers) {
    hdrs = natsHeaders();
    for (const [k, v] of Object.entries(options.headers)) hdrs.set(k, v);
  }
  const reply = await nc.request(subject, encodeBody(body), {
    timeout: options.timeout ?? 10_000,
    headers: hdrs,
  });
  return JSON.parse(new TextDecoder().decode(reply.data));
}

/** Decodes FETCH/QUERY items' base64 payloads to text. */
export function texts(reply: Record<string, unknown>): string[] {
  const items = (reply.messages ?? []) as { payload: string }[];
  return items.map((m) => Buffer.from(m.payload, "base64").toString("utf8"));
}
