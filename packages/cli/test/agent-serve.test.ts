import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { A2AClient, partsText } from "@mq9/client/a2a";
import { eventually, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { type RunningCli, start } from "./cli-run.js";

// biome-ignore lint/suspicious/noExplicitAny: A2A wire JSON, read field by field
type Json = Record<string, any>;
const dir = fileURLToPath(new URL("./bridge-agents/", import.meta.url));

const outputText = (task: Json) =>
  (task.artifacts ?? []).flatMap((a: Json) => a.parts.map((p: Json) => partsText([p]))).join("");

/** Whether the start/end lines of the log ever show two tasks running at once. */
function overlapped(log: string): boolean {
  let running = 0;
  for (const line of log.split("\n")) {
    if (line.startsWith("start")) running++;
    if (running > 1) return true;
    if (line.startsWith("end")) running--;
  }
  return false;
}

describe("mq9 agent serve — a command-line agent as an A2A agent", () => {
  let t: TestBroker;
  let a2a: A2AClient;
  const logDir = tempDir("mq9-bridge-");
  const running: RunningCli[] = [];

  const serve = async (card: string, exec: string, extra: string[] = [], log = "log") => {
    const path = join(logDir, log);
    writeFileSync(path, "");
    const child = start(
      ["agent", "serve", "--server", t.url, "--card", join(dir, card), "--exec", exec, "--json", ...extra],
      { BRIDGE_LOG: path },
    );
    running.push(child);
    await eventually(() => child.stdout().includes('"serving"') || child.child.exitCode !== null, 20_000);
    expect(child.stdout()).toContain('"serving"');
    return { child, log: () => readFileSync(path, "utf8") };
  };

  beforeAll(async () => {
    t = await startBroker();
    a2a = new A2AClient(await t.client(), { timeoutMs: 30_000 });
  });

  afterAll(async () => {
    for (const cli of running) cli.child.kill("SIGKILL");
    await a2a.close();
    await t.close();
  });

  it("registers its card, streams stdout lines as artifact chunks, completes on exit 0", async () => {
    const { child } = await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.worker"]);
    const [found] = await a2a.discover({ text: "script worker" });
    expect(found).toMatchObject({ name: "Script Worker", mailbox: "bridge.worker" });

    const events: Json[] = [];
    for await (const event of a2a.stream("bridge.worker", "sort the list")) events.push(event);
    const chunks = events.filter((e) => e.artifactUpdate).map((e) => e.artifactUpdate);
    expect(chunks.map((c) => partsText(c.artifact.parts))).toEqual([
      "working on: sort the list\n",
      "done\n",
      "",
    ]);
    expect(chunks.map((c) => c.append ?? false)).toEqual([false, true, true]);
    expect(chunks.at(-1).lastChunk).toBe(true);
    const final = events.at(-1)!.task;
    expect(final.status.state).toBe("TASK_STATE_COMPLETED");
    expect(outputText(final)).toBe("working on: sort the list\ndone\n");
    child.child.kill("SIGTERM");
    await child.exited;
  });

  it("a non-zero exit fails the task with the process's stderr", async () => {
    await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.failing"]);
    const { task } = await a2a.send("bridge.failing", "please fail");
    expect(task?.status.state).toBe("TASK_STATE_FAILED");
    expect(partsText(task?.status.message?.parts)).toMatch(/exited with code 3: cannot do: please fail/);
    expect(outputText(task!)).toBe("partial output\n");
  });

  it("a task that runs past --task-timeout is killed and fails; the next task still runs", async () => {
    await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.slow", "--task-timeout", "1"]);
    const { task } = await a2a.send("bridge.slow", "hang forever");
    expect(task?.status.state).toBe("TASK_STATE_FAILED");
    expect(partsText(task?.status.message?.parts)).toMatch(/timed out after 1 s/);
    const next = await a2a.send("bridge.slow", "quick job");
    expect(next.task?.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("--concurrency 1 runs one process at a time; --concurrency 3 runs them side by side", async () => {
    const one = await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.one"], "one.log");
    const results = await Promise.all([1, 2, 3].map((i) => a2a.send("bridge.one", `busy job ${i}`)));
    expect(results.map((r) => r.task?.status.state)).toEqual(Array(3).fill("TASK_STATE_COMPLETED"));
    expect(one.log().match(/^start/gm)).toHaveLength(3);
    expect(overlapped(one.log())).toBe(false);

    const three = await serve(
      "shout.yaml",
      join(dir, "shout.sh"),
      ["--mailbox", "bridge.three", "--input", "arg", "--concurrency", "3"],
      "three.log",
    );
    const shouted = await Promise.all(["a b", "c", "d"].map((text) => a2a.send("bridge.three", text)));
    expect(shouted.map((r) => outputText(r.task!))).toEqual(["A B\n", "C\n", "D\n"]);
    expect(overlapped(three.log())).toBe(true);
  });

  it("a last line starting with [INPUT_REQUIRED] asks the caller; the follow-up gets the conversation", async () => {
    await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.asking"]);
    const first = await a2a.send("bridge.asking", "a question for you");
    expect(first.task?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(partsText(first.task?.status.message?.parts)).toBe("Which language?");
    const second = await a2a.send("bridge.asking", "French", { taskId: first.task!.id as string });
    expect(second.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(outputText(second.task!)).toContain("user: French");
  });

  it("SIGTERM unregisters; tasks sent while it is down wait in its mailbox and run when it is back", async () => {
    const first = await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.offline"]);
    const [ref] = (await a2a.discover({ text: "script worker" })).filter(
      (a) => a.mailbox === "bridge.offline",
    );
    first.child.child.kill("SIGTERM");
    expect(await first.child.exited).toBe(0);
    const after = await a2a.discover({ text: "script worker" });
    expect(after.map((a) => a.mailbox)).not.toContain("bridge.offline");

    const queued = a2a.send(ref, "queued while away");
    await eventually(async () => (await t.client().then((c) => c.query("bridge.offline"))).length > 0);
    await serve("worker.yaml", join(dir, "worker.sh"), ["--mailbox", "bridge.offline"]);
    const { task } = await queued;
    expect(task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(outputText(task!)).toContain("working on: queued while away");
  });
});
