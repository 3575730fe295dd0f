import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { eventually, freePort, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "./cli-harness.js";

const PGBOUNCER = "/usr/sbin/pgbouncer";

/** Why a real PgBouncer cannot run here; with CI set, a missing one is a failure. */
function pgbouncerMissing(): string | undefined {
  if (existsSync(PGBOUNCER)) return undefined;
  const reason = "pgbouncer not found (apt-get install pgbouncer)";
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

const missing = postgresMissing() ?? pgbouncerMissing();

/** The `postgres` user's ids when we are root (PgBouncer refuses to run as root). */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

// A transaction-mode pooler would hand one node's session-level locks to another node's
// requests; mq9 must not start through it as if the database were merely down.
describe.skipIf(missing !== undefined)(
  `mq9 serve --postgres through PgBouncer${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();
    const stops: (() => void)[] = [];
    afterAll(() => {
      for (const stop of stops) stop();
    });

    it("says a pooler refused its connection and what to point --postgres at, not that the database is down", async () => {
      const dir = tempDir();
      const port = await freePort();
      writeFileSync(
        join(dir, "pgbouncer.ini"),
        [
          "[databases]",
          `* = host=127.0.0.1 port=${db.pg.port}`,
          "[pgbouncer]",
          "listen_addr = 127.0.0.1",
          `listen_port = ${port}`,
          "unix_socket_dir =",
          "auth_type = trust",
          `auth_file = ${join(dir, "users.txt")}`,
          "pool_mode = transaction",
        ].join("\n"),
      );
      writeFileSync(join(dir, "users.txt"), '"postgres" ""\n');
      const user = runAs();
      if (user)
        for (const path of [dir, join(dir, "pgbouncer.ini"), join(dir, "users.txt")])
          chownSync(path, user.uid, user.gid);
      const bouncer = spawn(PGBOUNCER, [join(dir, "pgbouncer.ini")], { stdio: "ignore", ...user });
      stops.push(() => bouncer.kill("SIGKILL"));
      await eventually(() => listening(port));

      const database = new URL(db.pg.url).pathname;
      const through = `postgres://postgres@127.0.0.1:${port}${database}`;
      const result = await runCli(["serve", "--postgres", through, "--port", "0", "--http-port", "0"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `a connection pooler at 127.0.0.1:${port}${database} refused mq9's connection`,
      );
      expect(result.stderr).toContain(
        "point --postgres at PostgreSQL itself, or at a pooler in session mode",
      );
      expect(result.stderr).not.toContain("is unavailable");
    });
  },
);
