import { Subjects } from "@mq9/protocol";
import { connect } from "nats";
import { describe, expect, it } from "vitest";
import { spawnServe, tempDir } from "./cli-harness.js";
import { call, expectStoredExactly, readAll, sendUntilRefused } from "./disk-full-harness.js";

describe("a full disk", () => {
  it("fails the SENDs it cannot store with a clear error, keeps serving, and loses none it acknowledged", async () => {
    const dataDir = tempDir("mq9-full-");
    // Files may not grow past 2 MiB: the message log fills up after some 1,900 SENDs of 1 KiB.
    const limited = await spawnServe(["--data", dataDir], {}, { fileSizeKiB: 2048 });
    const nc = await connect({ servers: `127.0.0.1:${limited.port}`, reconnect: false });
    await call(nc, Subjects.mailboxCreate, { name: "full.box" });
    const payload = new Uint8Array(1024).fill(7);
    const { acknowledged, failure } = await sendUntilRefused(nc, "full.box", payload, 5_000);
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
      await expectStoredExactly(again, "full.box", acknowledged, payload);
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
