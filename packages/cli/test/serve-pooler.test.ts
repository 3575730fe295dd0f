import { pgbouncerMissing, postgresMissing, startPgBouncer, usePrivatePostgres } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli-harness.js";

const missing = postgresMissing() ?? pgbouncerMissing();

// A transaction-mode pooler would hand one node's session-level locks to another node's
// requests; mq9 must not start through it as if the database were merely down.
describe.skipIf(missing !== undefined)(
  `mq9 serve --postgres through PgBouncer${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();

    it("says a pooler refused its connection and what to point --postgres at, not that the database is down", async () => {
      const bouncer = await startPgBouncer(db.pg, { poolMode: "transaction" });
      try {
        const result = await runCli(["serve", "--postgres", bouncer.url, "--port", "0", "--http-port", "0"]);
        expect(result.code).toBe(1);
        const where = `127.0.0.1:${bouncer.port}${new URL(bouncer.url).pathname}`;
        expect(result.stderr).toContain(`a connection pooler at ${where} refused mq9's connection`);
        expect(result.stderr).toContain(
          "point --postgres at PostgreSQL itself, or at a pooler in session mode",
        );
        expect(result.stderr).not.toContain("is unavailable");
      } finally {
        bouncer.stop();
      }
    });
  },
);
