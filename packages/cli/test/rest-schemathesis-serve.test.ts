import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePythonEnv, runSchemathesis, skipWithoutPython } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { agents, http, one, type Served, serve } from "./orchestrator-harness.js";

// What a new user runs: schemathesis against `mq9 serve`'s own OpenAPI document, whose routes
// are the broker's and the orchestrator's (tasks, traces, dead letters, templates). Every check
// on: what the document accepts is accepted, what it refuses is refused, every answer documented.
describe.skipIf(skipWithoutPython("schemathesis"))(
  "REST API v1 of mq9 serve — schemathesis against its OpenAPI document",
  () => {
    let served: Served;
    let workers: { stop(): Promise<void> };
    beforeAll(async () => {
      // Made once (about a minute), before the broker starts.
      await ensurePythonEnv("schemathesis");
      // Templates an agent does, one named as a fuzzer's first guess at a string would be (quoted:
      // YAML reads a bare 0 as a number), so that generated tasks run as well as get refused.
      const templates = join(tempDir(), "templates");
      mkdirSync(templates);
      writeFileSync(join(templates, "echo.yaml"), one("echo", "echo"));
      writeFileSync(join(templates, "0.yaml"), one('"0"', "echo"));
      served = await serve(["--data", tempDir(), "--templates", templates]);
      workers = await agents(`mq9://127.0.0.1:${served.port}`, [{ name: "echoer", capabilities: ["echo"] }]);
      // Something to find: mailboxes with messages of each priority, and a finished task.
      for (const name of ["0", "a"]) {
        expect((await http("POST", `${served.api}/api/v1/mailboxes`, { name, ttl: 0 })).status).toBe(201);
        for (const priority of ["critical", "urgent", "normal"]) {
          const sent = await http("POST", `${served.api}/api/v1/mailboxes/${name}/messages`, {
            payload: `to ${name}`,
            priority,
          });
          expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
        }
      }
      const task = await http("POST", `${served.api}/api/v1/tasks?timeout_ms=30000`, {
        task_type: "echo",
        payload: { text: "hello" },
      });
      expect(task.body.status, JSON.stringify(task.body)).toBe("completed");
    }, 15 * 60_000);
    afterAll(async () => {
      await workers?.stop();
      await served?.stop();
    });

    it("every check passes: no failure, no error", { timeout: 10 * 60_000 }, async () => {
      const run = await runSchemathesis(`${served.api}/api/v1/openapi.json`, { maxExamples: 40 });
      expect(run.code, run.output).toBe(0);
    });
  },
);
