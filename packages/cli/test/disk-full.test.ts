import { Subjects } from "@mq9/protocol";
import { connect, type NatsConnection } from "nats";
import { describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function call(nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, unknown>> {
  const data = body instanceof Uint8Array ? body : enc.encode(JSON.stringify(body));
  return JSON.parse(dec.decode((await nc.request(subject, data, { timeout: 10_000 })).data));
}

/** Every message of a mailbox, read with stateless fetches. */
async function readAll(nc: NatsConnection, box: string): Promise<{ msg_id: number; payload: string }[]> {
  const all: { msg_id: number; payload: string }[] = [];
  for (;;) {
    const reply = await call(nc, Subjects.fetch(box), {
      deliver: "from_id",
      from_id: (all.at(-1)?.msg_id ?? -1) + 1,
      config: { num_msgs: 500, max_wait_ms: 0 },
    });
    const batch = reply.messages as { msg_id: number; payload: string }[];
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}

describe("a full disk", () => {
  it("fails the SENDs it cannot store with a clear error, keeps serving, and loses none it acknowledged", async () => {
    const dataDir = tempDir("mq9-full-");
    // Files may not grow past 2 MiB: the message log fills up after some 1,900 SENDs of 1 KiB.
    const limited = await spawnServe(["--data", dataDir], {}, { fileSizeKiB: 2048 });
    const nc = await connect({ servers: `127.0.0.1:${limited.port}`, reconnect: false });
    await call(nc, Subjects.mailboxCreate, { name: "full.box" });
    const payload = new Uint8Array(1024).fill(7);
    const acknowledged: number[] = [];
    let failure = "";
    for (let i = 0; i < 5_000 && failure === ""; i++) {
      const reply = await call(nc, Subjects.send("full.box"), payload);
      if (reply.error) failure = reply.error as string;
      else acknowledged.push(reply.msg_id as number);
    }
    expect(failure).toMatch(/cannot store the message: the disk .* is full \(EFBIG\)/);
    expect(acknowledged.length).toBeGreaterThan(1_000);
    // Still serving: reads work and the connection is up.
    expect((await readAll(nc, "full.box")).map((m) => m.msg_id)).toEqual(acknowledged);
    await nc.close();
    limited.child.kill("SIGTERM");
    await limited.exited;

    const restarted = await spawnServe(["--data", dataDir]);
    const again = await connect({ servers: `127.0.0.1:${restarted.port}`, reconnect: false });
    try {
      const stored = await readAll(again, "full.box");
      expect(stored.map((m) => m.msg_id)).toEqual(acknowledged);
      expect(stored.every((m) => Buffer.from(m.payload, "base64").equals(Buffer.from(payload)))).toBe(true);
      const after = await call(again, Subjects.send("full.box"), payload);
      expect(after.error).toBe("");
      expect(after.msg_id).toBeGreaterThan(acknowledged.at(-1) as number);
    } finally {
      await again.close();
      restarted.child.kill("SIGTERM");
      await restarted.exited;
    }
  }, 120_000);
});
