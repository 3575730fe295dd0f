import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { ensurePythonEnv, skipWithoutPython } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

/** What a schemathesis run printed and how it ended. */
interface Run {
  code: number;
  output: string;
}

function schemathesis(python: string, args: string[], cwd: string): Promise<Run> {
  const cli = join(python, "..", "schemathesis");
  return new Promise((resolve) => {
    execFile(
      cli,
      args,
      {
        cwd,
        timeout: 8 * 60_000,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, NO_COLOR: "1", COLUMNS: "120" },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

// The REST API fuzzed against its own OpenAPI document, as anyone would check it: every
// check on, valid requests must be accepted, invalid ones refused, every answer documented.
describe.skipIf(skipWithoutPython("schemathesis"))(
  "REST API v1 — schemathesis against its OpenAPI document",
  () => {
    let t: TestBroker;
    let base: string;
    let python: string;
    const work = mkdtempSync(join(tmpdir(), "mq9-schemathesis-"));
    beforeAll(async () => {
      python = await ensurePythonEnv("schemathesis");
      t = await startTestBroker({ http: { port: 0 } });
      base = `http://127.0.0.1:${t.broker.http!.port}`;
      // Something to find: mailboxes with messages of each priority, a consumer group, agents.
      for (const name of ["0", "a", "orders.eu"]) {
        await t.request(Subjects.mailboxCreate, { name, ttl: 0 });
        for (const priority of ["critical", "urgent", "normal"]) {
          await t.request(Subjects.send(name), `to ${name}`, { headers: { "mq9-priority": priority } });
        }
        await t.request(Subjects.fetch(name), {
          group_name: "0",
          deliver: "earliest",
          config: { num_msgs: 1 },
        });
      }
      await t.request(Subjects.agentRegister, {
        name: "translator",
        mailbox: "a",
        payload: "translates English to French",
        tags: ["lang"],
        ttl: 600,
      });
      await t.request(Subjects.agentRegister, { name: "zero", mailbox: "0", payload: "agent zero" });
    }, 15 * 60_000);
    afterAll(async () => {
      await t?.close();
      rmSync(work, { recursive: true, force: true });
    });

    it("every check passes: no failure, no error", { timeout: 10 * 60_000 }, async () => {
      const run = await schemathesis(
        python,
        [
          "run",
          `${base}/api/v1/openapi.json`,
          "--checks",
          "all",
          "--seed",
          "20240601",
          "--max-examples",
          "40",
          // One worker: the run stays the same from run to run, and parallel workers of this
          // version can fail inside hypothesis ("AST constructor recursion depth mismatch").
          "--workers",
          "1",
          "--request-timeout",
          "10",
          "--generation-database",
          "none",
          "--no-color",
        ],
        work,
      );
      expect(run.code, run.output).toBe(0);
    });
  },
);
