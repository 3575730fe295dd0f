// A real PgBouncer in front of a private PostgreSQL, for the tests of what mq9 does behind a pooler.
import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually.js";
import { freePort } from "./free-port.js";
import { type PrivatePostgres, postgresOsUser } from "./private-postgres.js";

const PGBOUNCER = "/usr/sbin/pgbouncer";

/** Why a real PgBouncer cannot run here (undefined when it can); with CI set, a missing one fails. */
export function pgbouncerMissing(): string | undefined {
  if (existsSync(PGBOUNCER)) return undefined;
  const reason = "pgbouncer not found (apt-get install pgbouncer; .ci/os-packages.txt)";
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

export interface PgBouncer {
  port: number;
  /** The private PostgreSQL's URL with PgBouncer's port in place of the server's. */
  url: string;
  stop(): void;
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

/**
 * Starts PgBouncer on a free port in `poolMode`, trusting the `postgres` user, with at most
 * `poolSize` server sessions (1: every client shares one session, as under load); `roundRobin`
 * spreads statements over the sessions.
 */
export async function startPgBouncer(
  pg: PrivatePostgres,
  options: { poolMode: "session" | "transaction"; poolSize?: number; roundRobin?: boolean },
): Promise<PgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), "mq9-pgbouncer-"));
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  const users = join(dir, "users.txt");
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=127.0.0.1 port=${pg.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${users}`,
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.poolSize ?? 20}`,
      // Each statement to the next idle session in turn, instead of the last one used.
      `server_round_robin = ${options.roundRobin ? 1 : 0}`,
    ].join("\n"),
  );
  writeFileSync(users, '"postgres" ""\n');
  const user = await postgresOsUser();
  if (user) for (const path of [dir, ini, users]) chownSync(path, user.uid, user.gid);
  const child = spawn(PGBOUNCER, [ini], { stdio: "ignore", ...user });
  let gone = false;
  child.once("exit", () => {
    gone = true;
  });
  await eventually(async () => {
    if (gone) throw new Error(`pgbouncer exited at start (${ini})`);
    return listening(port);
  });
  const url = new URL(pg.url);
  url.port = String(port);
  return { port, url: url.toString(), stop: () => child.kill("SIGKILL") };
}
