import { Subjects } from "@mq9/protocol";
import type { NatsConnection } from "nats";
import { expect } from "vitest";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One mq9 request with a JSON body (or raw bytes), its JSON reply. */
export async function call(
  nc: NatsConnection,
  subject: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const data = body instanceof Uint8Array ? body : enc.encode(JSON.stringify(body));
  return JSON.parse(dec.decode((await nc.request(subject, data, { timeout: 10_000 })).data));
}

/** Every message of a mailbox, read with stateless fetches. */
export async function readAll(
  nc: NatsConnection,
  box: string,
): Promise<{ msg_id: number; payload: string }[]> {
  const all: { msg_id: number; payload: string }[] = [];
  for (;;) {
    const reply = await call(nc, Subjects.fetch(box), {
      deliver: "from_id",
      from_id: (all.at(-1)?.msg_id ?? -1) + 1,
      config: { num_msgs: 500, max_wait_ms: 0 },
    });
    if (reply.error) throw new Error(`FETCH failed: ${reply.error}`);
    const batch = reply.messages as { msg_id: number; payload: string }[];
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}

/** SENDs `payload` to `box` until one is refused (at most `max`): the ids acknowledged, and the refusal. */
export async function sendUntilRefused(
  nc: NatsConnection,
  box: string,
  payload: Uint8Array,
  max: number,
): Promise<{ acknowledged: number[]; failure: string }> {
  const acknowledged: number[] = [];
  let failure = "";
  for (let i = 0; i < max && failure === ""; i++) {
    const reply = await call(nc, Subjects.send(box), payload);
    if (reply.error) failure = reply.error as string;
    else acknowledged.push(reply.msg_id as number);
  }
  return { acknowledged, failure };
}

/** The mailbox holds exactly the acknowledged SENDs, in order, each with `payload`'s bytes. */
export async function expectStoredExactly(
  nc: NatsConnection,
  box: string,
  acknowledged: readonly number[],
  payload: Uint8Array,
): Promise<void> {
  const stored = await readAll(nc, box);
  expect(stored.map((m) => m.msg_id)).toEqual(acknowledged);
  expect(stored.every((m) => Buffer.from(m.payload, "base64").equals(Buffer.from(payload)))).toBe(true);
}
