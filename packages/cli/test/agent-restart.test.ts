import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import {
  type AgentSpec,
  agents,
  ended,
  http,
  one,
  type Served,
  serve,
  until,
} from "./orchestrator-harness.js";

describe("agent restart — canceled work is not redone", () => {
  const running: { stop(signal?: NodeJS.Signals): Promise<void> }[] = [];
  let served: Served | undefined;
  afterAll(async () => {
    // SIGKILL: a handler deaf to its abort signal would hold a graceful stop for its lease.
    for (const child of running) await child.stop("SIGKILL");
    await served?.stop();
  });

  it("a handler deaf to abort, killed with -9: tasks canceled meanwhile are dropped after the restart; a new task gets a slot", async () => {
    const templates = join(tempDir(), "templates");
    mkdirSync(templates);
    writeFileSync(join(templates, "deaf.yaml"), one("deaf", "deaf.work"));
    served = await serve(["--data", tempDir(), "--templates", templates]);
    const { api } = served;
    const server = `mq9://127.0.0.1:${served.port}`;
    const spec: AgentSpec = {
      name: "deaf",
      capabilities: ["deaf.work"],
      max_concurrency: 2,
      // Registered for longer than the test, so work is routed to it while it is down, as to
      // an agent whose crash the registry has not noticed yet.
      ttl_seconds: 300,
      // A killed instance's messages come back soon.
      lease_ms: 1_000,
      report: true,
      log: true,
    };
    const submit = async (payload: unknown): Promise<string> => {
      const res = await http("POST", `${api}/api/tasks?async=true`, { task_type: "deaf", payload });
      expect(res.status).toBe(202);
      return res.body.task_id;
    };
    const cancel = async (taskId: string) => {
      expect((await http("POST", `${api}/api/tasks/${taskId}/cancel`)).status).toBe(200);
    };

    const first = await agents(server, [spec]);
    running.push(first);
    // Two tasks fill both slots with handlers that never end.
    const held = [await submit({ stall: true }), await submit({ stall: true })];
    await until("both tasks to be handled", () => held.every((id) => first.output().includes(`task ${id}`)));
    // Canceled while its handler runs: the handler does not listen.
    await cancel(held[0]);
    await first.stop("SIGKILL");
    // Dispatched to the dead agent's mailbox, then canceled, while it is down; and the other
    // held task canceled while it is down.
    const queued = await submit({ stall: true });
    await until("the queued task's step to be in the agent's mailbox", async () => {
      const { body } = await http("GET", `${api}/api/tasks/${queued}`);
      return body.steps.work.status === "running";
    });
    await cancel(held[1]);
    await cancel(queued);

    const second = await agents(server, [spec]);
    running.push(second);
    const canceled = [...held, queued];
    await until(
      "the restarted agent to drop the three canceled tasks",
      () =>
        canceled.every((id) =>
          second
            .output()
            .split("\n")
            .some((line) => line.startsWith("log ") && line.includes("dropped") && line.includes(id)),
        ),
      30_000,
    );
    expect(second.output()).not.toMatch(/^handled /m);

    const fresh = await submit({ text: "after the restart" });
    const done = await ended(api, fresh, 30_000);
    expect(done.status).toBe("completed");
    expect(second.output()).toContain(`task ${fresh}`);
    for (const id of canceled) expect(second.output()).not.toContain(`task ${id}`);
  }, 120_000);
});
