import type { Worker } from "node:worker_threads";
import type { Logger } from "@mq9/broker";
import { ClusterLock } from "@mq9/broker/internal";
import { eventually, postgresMissing, startBroker, usePrivatePostgres } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
// Built: the orchestrator's thread runs dist/serve/orchestrator-worker.js beside it.
import { ServeOrchestrator } from "../dist/serve/orchestrator.js";
import { loadServeConfig } from "../src/serve/config.js";
import { OrchestratorLeadership, SOLE_BROKER } from "../src/serve/orchestrator-leadership.js";
import { tempDir } from "./cli-harness.js";

const missing = postgresMissing();

function errorsOf(): { logger: Logger; errors: string[]; infos: string[] } {
  const errors: string[] = [];
  const infos: string[] = [];
  const quiet = () => {};
  const logger = {
    debug: quiet,
    info: (obj: object | string, msg?: string) => infos.push(String(msg ?? obj)),
    warn: quiet,
    error: (obj: object | string, msg?: string) => errors.push(String(msg ?? obj)),
  } as Logger;
  return { logger, errors, infos };
}

// The node that holds the orchestrator's lock is the only one that may run it: if its start
// failed for good, no node would run the orchestrator and the cluster's tasks would stop.
describe.skipIf(missing !== undefined)(
  `orchestrator leadership${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();

    it("a start that fails is tried again while the node holds the lock, once at a time", async () => {
      const { logger, errors } = errorsOf();
      const lock = new ClusterLock(
        { connectionString: db.pg.url },
        "test:leadership",
        logger,
        "the orchestrator",
      );
      let closes = 0;
      const leadership = new OrchestratorLeadership(
        lock,
        {
          close: async () => {
            closes++;
          },
          onLost: () => {},
        },
        logger,
      );
      let starts = 0;
      let inStart = 0;
      let mostAtOnce = 0;
      try {
        leadership.begin(async () => {
          starts++;
          inStart++;
          mostAtOnce = Math.max(mostAtOnce, inStart);
          // Slower than the tries, as a start under load is: a second try must not start another.
          await new Promise((resolve) => setTimeout(resolve, 2_500));
          inStart--;
          if (starts === 1) throw new Error("no answer from the broker in time");
        });
        await eventually(async () => starts === 2 && inStart === 0 && leadership.leading, 30_000);
        expect(errors).toContain(
          "the orchestrator did not start: no answer from the broker in time; tries again in 2 s",
        );
        expect(mostAtOnce).toBe(1);
        // Running now: no more starts.
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        expect(starts).toBe(2);
      } finally {
        await leadership.close();
      }
      expect(closes).toBe(1);
    }, 60_000);
  },
);

// A thread that stops after a good start (an uncaught failure in it, say) would leave the API
// answering 503 until the broker restarted: the leader starts the orchestrator again.
describe("orchestrator leadership on one broker", () => {
  it("starts the orchestrator again when its thread stops, with its metrics still served", async () => {
    const { logger, errors, infos } = errorsOf();
    const ready = () => infos.filter((line) => line.startsWith("orchestrator ready")).length;
    const served = await startBroker();
    const config = loadServeConfig({ flags: { data: tempDir(), templates: tempDir() } });
    const orchestrator = new ServeOrchestrator(config, logger);
    const leadership = new OrchestratorLeadership(SOLE_BROKER, orchestrator, logger);
    const threadOf = () => (orchestrator as unknown as { worker?: Worker }).worker;
    const answers = async () => {
      const metrics = await served.broker.metrics.registry.metrics();
      return metrics.includes("mq9_orchestrator_tasks");
    };
    try {
      leadership.begin(() =>
        orchestrator.start(served.broker.host, served.broker.port, served.broker.metrics.registry),
      );
      await eventually(async () => ready() === 1, 30_000);
      expect(await answers()).toBe(true);
      const first = threadOf()!;
      await first.terminate();
      // Ready again (or failing to be), its collectors served as before.
      await eventually(async () => ready() === 2 || errors.length > 1, 30_000);
      expect(threadOf()).not.toBe(first);
      expect(await answers()).toBe(true);
      expect(errors).toContain("the orchestrator's thread stopped (exit code 1); starts it again in 2 s");
      expect(errors).toHaveLength(1);
    } finally {
      await leadership.close();
      await served.close();
    }
  }, 90_000);
});
