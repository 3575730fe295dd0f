import { Subjects } from "@mq9/protocol";
import { connect, type NatsConnection } from "nats";
import { describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function call(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown>> {
  const data = typeof body === "string" ? enc.encode(body) : enc.encode(JSON.stringify(body));
  const reply = JSON.parse(dec.decode((await nc.request(subject, data, { timeout: 10_000 })).data));
  if (reply.error) throw new Error(reply.error);
  return reply;
}

/** Reads every message of a mailbox with stateless fetches, paging by msg_id. */
async function readAll(nc: NatsConnection, box: string): Promise<{ msg_id: number; payload: string }[]> {
  const all: { msg_id: number; payload: string }[] = [];
  let from = 0;
  for (;;) {
    const reply = await call(nc, Subjects.fetch(box), {
      deliver: "from_id",
      from_id: from,
      config: { num_msgs: 1000, max_wait_ms: 0 },
    });
    const batch = reply.messages as { msg_id: number; payload: string }[];
    if (batch.length === 0) return all;
    all.push(...batch);
    from = batch.at(-1)!.msg_id + 1;
  }
}

describe("crash safety", () => {
  it("kill -9 under load: every acknowledged SEND is there exactly once; ACKs hold; un-ACKed messages return", async () => {
    const dataDir = tempDir("mq9-crash-");
    const first = await spawnServe(["--data", dataDir]);
    const nc = await connect({ servers: `127.0.0.1:${first.port}`, reconnect: false });

    await call(nc, Subjects.mailboxCreate, { name: "crash.acks" });
    for (let i = 0; i < 20; i++) await call(nc, Subjects.send("crash.acks"), `a${i}`);
    const fetchFor = (lease: number, n: number) => ({
      group_name: "g",
      deliver: "earliest",
      config: { num_msgs: n, max_wait_ms: 0, lease_ms: lease },
    });
    const acked = (await call(nc, Subjects.fetch("crash.acks"), fetchFor(30_000, 10))).messages as {
      msg_id: number;
    }[];
    await call(nc, Subjects.ack("crash.acks"), {
      group_name: "g",
      mail_address: "crash.acks",
      msg_id: acked.at(-1)!.msg_id,
    });
    await call(nc, Subjects.fetch("crash.acks"), fetchFor(300, 5));

    await call(nc, Subjects.mailboxCreate, { name: "crash.load" });
    const confirmed = new Map<string, number>();
    let next = 0;
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const body = `m${next++}`;
        try {
          const reply = await call(nc, Subjects.send("crash.load"), body);
          confirmed.set(body, reply.msg_id as number);
          if (confirmed.size === 3000 && !killed) {
            killed = true;
            first.child.kill("SIGKILL");
          }
        } catch {
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    expect(await first.exited).toBe("SIGKILL");
    await nc.close().catch(() => {});
    expect(confirmed.size).toBeGreaterThanOrEqual(3000);

    const second = await spawnServe(["--data", dataDir]);
    const nc2 = await connect({ servers: `127.0.0.1:${second.port}` });
    try {
      const stored = await readAll(nc2, "crash.load");
      const counts = new Map<string, number>();
      for (const m of stored) {
        const body = Buffer.from(m.payload, "base64").toString();
        counts.set(body, (counts.get(body) ?? 0) + 1);
      }
      for (const [body, id] of confirmed) {
        expect(counts.get(body), `${body} (msg_id ${id})`).toBe(1);
        expect(stored.find((m) => m.msg_id === id)).toBeDefined();
      }
      expect(new Set(stored.map((m) => m.msg_id)).size).toBe(stored.length);

      await new Promise((r) => setTimeout(r, 400));
      const after = (await call(nc2, Subjects.fetch("crash.acks"), fetchFor(30_000, 100))).messages as {
        payload: string;
      }[];
      const bodies = after.map((m) => Buffer.from(m.payload, "base64").toString());
      expect(bodies).toEqual(Array.from({ length: 10 }, (_, i) => `a${i + 10}`));
    } finally {
      await nc2.close();
      second.child.kill("SIGTERM");
      await second.exited;
    }
  }, 60_000);
});
