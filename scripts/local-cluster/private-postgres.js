// A private PostgreSQL for tests, benchmarks and `npm run cluster:up`: initdb in a temp dir, pg_ctl
// start on a free loopback port, stopped and removed again by stop(). PostgreSQL refuses to run as
// root, so when we are root the server runs as the `postgres` OS user (the Debian package makes it).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { chown } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.js";

const run = promisify(execFile);

const BIN_DIRS = [
  process.env.MQ9_PG_BIN,
  "/usr/lib/postgresql/17/bin",
  "/usr/lib/postgresql/16/bin",
  "/usr/lib/postgresql/15/bin",
  "/usr/local/pgsql/bin",
].filter(Boolean);

/** The folder holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function findPostgresBin() {
  return BIN_DIRS.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
}

/** uid/gid to run the server as: ours, or the `postgres` user's when we are root. */
export async function serverUser() {
  if (userInfo().uid !== 0) return undefined;
  const { stdout: uid } = await run("id", ["-u", "postgres"]).catch(() => {
    throw new Error(
      "we run as root and PostgreSQL refuses root: create a 'postgres' OS user (the Debian package postgresql-15 does)",
    );
  });
  const { stdout: gid } = await run("id", ["-g", "postgres"]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/**
 * Starts a throw-away PostgreSQL. Options: port (default a free one), fsync (default false: the
 * data survives a killed server, not a lost machine, which is all a test needs), database (created,
 * default "mq9").
 * Returns { url, port, host, dataDir, bin, query(sql), stop(), kill(), start(), startStandby() }.
 */
export async function startPrivatePostgres(options = {}) {
  const bin = findPostgresBin();
  if (!bin) {
    throw new Error(
      "PostgreSQL is not installed (no initdb/pg_ctl in /usr/lib/postgresql/*/bin): apt-get install postgresql-15, or set MQ9_PG_BIN",
    );
  }
  const user = await serverUser();
  const root = mkdtempSync(join(options.tmpDir ?? tmpdir(), "mq9-pg-"));
  const dataDir = join(root, "data");
  const socketDir = root;
  if (user) await chown(root, user.uid, user.gid);
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { ...process.env, LC_ALL: "C", LANG: "C" };
  const exec = (cmd, args) => run(join(bin, cmd), args, { ...as, env, cwd: root, timeout: 60_000 });
  await exec("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const port = options.port ?? (await freePort());
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${socketDir}'`,
    `fsync = ${options.fsync === true ? "on" : "off"}`,
    "max_connections = 200",
    "shared_buffers = 128MB",
    "log_min_messages = warning",
  ];
  writeFileSync(join(dataDir, "postgresql.auto.conf"), `${settings.join("\n")}\n`);
  if (user) await chown(join(dataDir, "postgresql.auto.conf"), user.uid, user.gid);
  const logFile = join(root, "server.log");
  const start = async () => {
    await exec("pg_ctl", ["start", "-w", "-t", "60", "-D", dataDir, "-l", logFile]);
  };
  const stopWith = async (mode) => {
    await exec("pg_ctl", ["stop", "-w", "-t", "60", "-m", mode, "-D", dataDir]).catch(() => {});
  };
  await start();
  const database = options.database ?? "mq9";
  const psqlAt = (atPort, sql, db = "postgres") =>
    exec("psql", [
      "-h",
      "127.0.0.1",
      "-p",
      String(atPort),
      "-U",
      "postgres",
      "-d",
      db,
      "-v",
      "ON_ERROR_STOP=1",
      "-Atc",
      sql,
    ]);
  const psql = (sql, db) => psqlAt(port, sql, db);
  await psql(`CREATE DATABASE ${database}`);
  let removed = false;
  const standbys = [];

  /**
   * A streaming-replication standby of this server: pg_basebackup of it into its own folder,
   * started on its own port. With `synchronous`, this server then waits for the standby at each
   * COMMIT (synchronous_standby_names), so nothing it acknowledged is missing after a promotion.
   */
  async function startStandby(standbyOptions = {}) {
    const standbyDir = join(root, `standby-${standbys.length + 1}`);
    await exec("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-U",
      "postgres",
      "-D",
      standbyDir,
      "-R",
      "-X",
      "stream",
      "-c",
      "fast",
      "--no-sync",
    ]);
    const standbyPort = await freePort();
    const standbyLog = join(root, `standby-${standbys.length + 1}.log`);
    // Later lines win: its own port, beside what the base backup copied and -R added.
    const auto = join(standbyDir, "postgresql.auto.conf");
    writeFileSync(auto, `${readFileSync(auto, "utf8")}port = ${standbyPort}\n`);
    const startIt = () => exec("pg_ctl", ["start", "-w", "-t", "60", "-D", standbyDir, "-l", standbyLog]);
    const stopIt = (mode) =>
      exec("pg_ctl", ["stop", "-w", "-t", "60", "-m", mode, "-D", standbyDir]).catch(() => {});
    await startIt();
    const standby = {
      host: "127.0.0.1",
      port: standbyPort,
      dataDir: standbyDir,
      url: `postgres://postgres@127.0.0.1:${standbyPort}/${database}`,
      async query(sql, db = database) {
        return (await psqlAt(standbyPort, sql, db)).stdout.trim();
      },
      /** Makes the standby the primary (pg_ctl promote) and waits until it takes writes. */
      async promote() {
        await exec("pg_ctl", ["promote", "-w", "-t", "60", "-D", standbyDir]);
      },
      start: startIt,
      kill: () => stopIt("immediate"),
      stop: () => stopIt("fast"),
    };
    standbys.push(standby);
    const deadline = Date.now() + 60_000;
    while (
      (await psql("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")).stdout.trim() === "0"
    ) {
      if (Date.now() > deadline)
        throw new Error(`the standby on port ${standbyPort} did not start streaming`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (standbyOptions.synchronous) {
      await psql("ALTER SYSTEM SET synchronous_standby_names = '*'");
      await psql("SELECT pg_reload_conf()");
    }
    return standby;
  }

  return {
    host: "127.0.0.1",
    port,
    dataDir,
    bin,
    database,
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    /** Runs SQL through psql as the superuser; resolves with its output. */
    async query(sql, db = database) {
      return (await psql(sql, db)).stdout.trim();
    },
    /** Starts the server again after stop() or kill(), on the same port and data. */
    start,
    /** Fast shutdown: clients are disconnected, the data stays. */
    pause: () => stopWith("fast"),
    /** Immediate shutdown, as a crash: the next start recovers from the WAL. */
    kill: () => stopWith("immediate"),
    startStandby,
    /** Stops the server (and its standbys) and removes its files. */
    async stop() {
      if (removed) return;
      removed = true;
      await Promise.all(standbys.map((standby) => standby.kill()));
      await stopWith("immediate");
      if (!options.keep) rmSync(root, { recursive: true, force: true });
    },
  };
}
