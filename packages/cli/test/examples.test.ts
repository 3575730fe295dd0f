import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Runs `node examples/<name>.js` against the broker, as the examples' headers say to. */
async function runExample(name: string, server: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [`examples/${name}.js`], {
    cwd: root,
    env: { ...process.env, MQ9_SERVER: server },
    timeout: 20_000,
  });
  return stdout.trimEnd().split("\n");
}

describe("examples run to completion against mq9 serve", () => {
  let serve: ServeProcess;
  let server: string;
  beforeAll(async () => {
    serve = await spawnServe(["--data", tempDir()]);
    server = `mq9://127.0.0.1:${serve.port}`;
  });
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
  });

  it("offline-handoff: results wait for the planner while it is offline", async () => {
    const lines = await runExample("offline-handoff", server);
    expect(lines[0]).toMatch(/^planner: sent 3 tasks to demo\.translator\.\w+ and went offline$/);
    expect(lines.slice(1)).toEqual([
      "translator: handled 3 tasks and went offline",
      "planner: good morning -> おはよう",
      "planner: thank you -> ありがとう",
      "planner: see you tomorrow -> また明日",
    ]);
  });

  it("worker-pool: three workers share the jobs, each once, critical first", async () => {
    const lines = await runExample("worker-pool", server);
    expect(lines[0]).toBe("queued 12 jobs: 6 normal, 4 urgent, 2 critical");
    const handled = lines.filter((l) => /^w\d handled/.test(l));
    expect(handled).toHaveLength(3);
    expect(lines).toContain("each job handled once: true");
    expect(lines).toContain("critical jobs started before any normal one: true");
    expect(lines.at(-1)).toBe("left in the queue: 0");
  });

  it("status-mailbox: compaction keeps one current status per agent", async () => {
    const lines = await runExample("status-mailbox", server);
    expect(lines).toEqual([
      "posted 8 updates from 3 agents",
      "the board holds 3 messages, one per agent:",
      "  indexer    indexing",
      "  crawler    done",
      "  summarizer summarising batch 1",
      "crawler by key: done",
    ]);
  });

  it("examples can run again on the same broker (unique mailbox names)", async () => {
    expect((await runExample("status-mailbox", server))[0]).toBe("posted 8 updates from 3 agents");
  });
});
