import { Subjects } from "@mq9/protocol";
import { ensurePythonEnv, runSchemathesis, skipWithoutPython } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

// The REST API fuzzed against its own OpenAPI document, as anyone would check it: every
// check on, valid requests must be accepted, invalid ones refused, every answer documented.
describe.skipIf(skipWithoutPython("schemathesis"))(
  "REST API v1 — schemathesis against its OpenAPI document",
  () => {
    let t: TestBroker;
    let base: string;
    beforeAll(async () => {
      // Made once (about a minute), before the broker starts.
      await ensurePythonEnv("schemathesis");
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
    });

    it("every check passes: no failure, no error", { timeout: 10 * 60_000 }, async () => {
      const run = await runSchemathesis(`${base}/api/v1/openapi.json`, { maxExamples: 40 });
      expect(run.code, run.output).toBe(0);
    });
  },
);
