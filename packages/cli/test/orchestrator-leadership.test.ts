import type { Logger } from "@mq9/broker";
import { ClusterLock } from "@mq9/broker/internal";
import { eventually, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { OrchestratorLeadership } from "../src/serve/orchestrator-leadership.js";

const missing = postgresMissing();

function errorsOf(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const quiet = () => {};
  const logger = {
    debug: quiet,
    info: quiet,
    warn: quiet,
    error: (obj: object | string, msg?: string) => errors.push(String(msg ?? obj)),
  } as Logger;
  return { logger, errors };
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
