import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { connect } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { call, expectStoredExactly, readAll, sendUntilRefused } from "./disk-full-harness.js";

async function health(served: ServeProcess): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`http://127.0.0.1:${served.httpPort}/healthz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function eventually<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in time; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Mounts a tmpfs of `size` at a fresh directory; the reason when this machine does not allow it. */
function mountTmpfs(size: string): { dir: string } | { reason: string } {
  const dir = tempDir("mq9-tmpfs-");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" });
    return { dir };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return {
      reason: `cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): ${(err as Error).message.split("\n")[0]}`,
    };
  }
}

const mounted = mountTmpfs("24m");

describe("a real full disk (a small tmpfs)", () => {
  const running: ServeProcess[] = [];
  beforeAll(() => {
    if ("reason" in mounted) console.warn(`skipped: ${mounted.reason}`);
  });
  afterAll(async () => {
    for (const served of running) {
      served.child.kill("SIGKILL");
      await served.exited;
    }
    if ("dir" in mounted) {
      execFileSync("umount", [mounted.dir]);
      rmSync(mounted.dir, { recursive: true, force: true });
    }
  });

  it.skipIf("reason" in mounted)(
    "reports the storage state on /healthz, starts on the full disk after a kill -9, and recovers by itself when space returns",
    async () => {
      const root = (mounted as { dir: string }).dir;
      const dataDir = join(root, "data");
      mkdirSync(dataDir);
      // Space to give back later.
      const filler = join(root, "filler");
      writeFileSync(filler, Buffer.alloc(6 * 1024 * 1024, 1));

      const first = await spawnServe(["--data", dataDir]);
      running.push(first);
      const nc = await connect({ servers: `127.0.0.1:${first.port}`, reconnect: false });
      expect((await call(nc, Subjects.mailboxCreate, { name: "full.box" })).error).toBe("");
      expect(await health(first)).toMatchObject({ status: 200, body: { storage: "ok" } });
      const payload = new Uint8Array(4096).fill(7);
      const { acknowledged, failure } = await sendUntilRefused(nc, "full.box", payload, 20_000);
      expect(failure).toMatch(/cannot store the message: .*(ENOSPC|full)/i);
      expect(acknowledged.length).toBeGreaterThan(100);
      // Not healthy while SENDs fail, and says why.
      expect(await health(first)).toMatchObject({ status: 503, body: { storage: "full" } });
      expect((await readAll(nc, "full.box")).map((m) => m.msg_id)).toEqual(acknowledged);
      await nc.close();
      first.child.kill("SIGKILL");
      await first.exited;

      // It starts on the full disk, serves what it has, and says the disk is full.
      const second = await spawnServe(["--data", dataDir]);
      running.push(second);
      const again = await connect({ servers: `127.0.0.1:${second.port}`, reconnect: false });
      try {
        await expectStoredExactly(again, "full.box", acknowledged, payload);
        const refused = await call(again, Subjects.send("full.box"), payload);
        expect(refused.error).toMatch(/cannot store the message/);
        expect(await health(second)).toMatchObject({ status: 503, body: { storage: "full" } });

        // Space comes back: it recovers by itself.
        rmSync(filler);
        await eventually(
          () => health(second),
          (h) => h.status === 200 && h.body.storage === "ok",
        );
        const after = await eventually(
          () => call(again, Subjects.send("full.box"), payload),
          (reply) => reply.error === "",
        );
        expect(after.msg_id).toBeGreaterThan(acknowledged.at(-1) as number);
        const registered = await call(again, Subjects.agentRegister, {
          name: "disk.agent",
          mailbox: "disk.agent.inbox",
          payload: "an agent registered after the disk was full",
        });
        expect(registered.error).toBe("");
      } finally {
        await again.close();
      }
    },
    180_000,
  );
});
