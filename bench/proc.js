// Child-process, port and temp-dir helpers for the benchmark.
// Everything started here is tracked so it can be torn down on normal exit, on errors and on Ctrl-C.
import { execFileSync, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository this bench runs from. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Our CLI entry point: BENCH_MQ9_CLI, or the built one. */
export const MQ9_CLI = process.env.BENCH_MQ9_CLI
  ? path.resolve(process.env.BENCH_MQ9_CLI)
  : path.join(REPO_ROOT, "packages", "cli", "dist", "main.js");

const children = new Set();
const tempDirs = new Set();

/** Progress line on stderr (the results go to stdout). */
export function progress(msg) {
  process.stderr.write(`[bench] ${msg}\n`);
}

/**
 * What every messaging bench gives `mq9 serve`: quiet logs, and neither the registry's embedder
 * nor the orchestrator, whose start-up and background work are not what it measures.
 */
export const MESSAGING_ONLY_ARGS = [
  "--log-level",
  "warn",
  "--registry-embedder",
  "none",
  "--orchestrator",
  "off",
];

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A system that could not be measured; `reason` is printed as-is. */
export class NotMeasured extends Error {
  constructor(reason, details = "") {
    super(reason);
    this.details = details;
  }
}

/** Absolute path of an executable: `envVar` if set, else the first match on PATH, else the fallbacks. */
export function findBinary(name, envVar, fallbacks = []) {
  const candidates = [];
  if (envVar && process.env[envVar]) candidates.push(process.env[envVar]);
  for (const dir of (process.env.PATH ?? "").split(path.delimiter))
    if (dir) candidates.push(path.join(dir, name));
  candidates.push(...fallbacks);
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  return null;
}

/** First line of `<bin> --version`, or null. */
export function binaryVersion(bin) {
  if (!bin) return null;
  try {
    const out = execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 5000, stdio: "pipe" });
    return out.trim().split("\n")[0];
  } catch {
    return null;
  }
}

export function makeTempDir(label) {
  const base = process.env.BENCH_TMPDIR || os.tmpdir();
  const dir = mkdtempSync(path.join(base, `mq9-bench-${label}-`));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (err) {
    progress(`could not remove ${dir}: ${err.message}`);
  }
  tempDirs.delete(dir);
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function portAccepts(host, port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

const OUTPUT_LIMIT = 64 * 1024;

/** CPU ms (user + system) from a /proc stat line, whose 14th and 15th fields are in clock ticks (100 Hz). */
function statCpuMs(file) {
  const text = readFileSync(file, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms (user + system) of a process so far, all its threads; 0 where /proc cannot be read. */
export function processCpuMs(pid) {
  try {
    return statCpuMs(`/proc/${pid}/stat`);
  } catch {
    return 0;
  }
}

/** CPU ms of a process's children that have exited (and were waited for), from /proc. */
export function childrenCpuMs(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return 0;
  }
}

/**
 * Starts measuring the CPU of named groups of processes and of this one (`client`); the function
 * it returns gives the ms each used since. `groups()` is asked at both ends, so processes that
 * come and go (PostgreSQL's backends) are found; a negative pid stands for the exited children of
 * that process. Linux only: elsewhere every server reads 0.
 */
export function cpuMeter(groups) {
  const read = () => {
    const out = { client: process.cpuUsage() };
    for (const [name, pids] of Object.entries(groups())) {
      out[name] = pids.reduce((sum, pid) => sum + (pid < 0 ? childrenCpuMs(-pid) : processCpuMs(pid)), 0);
    }
    return out;
  };
  const start = read();
  return () => {
    const end = read();
    const used = {};
    for (const name of Object.keys(end)) {
      used[name] =
        name === "client"
          ? (end.client.user + end.client.system - start.client.user - start.client.system) / 1000
          : end[name] - (start[name] ?? 0);
    }
    return used;
  };
}

/**
 * CPU time a process has used so far: its main thread (the one running the event loop) and all
 * its threads. Undefined where /proc cannot be read (not Linux).
 */
export function cpuTimes(pid) {
  try {
    return { mainMs: statCpuMs(`/proc/${pid}/task/${pid}/stat`), allMs: statCpuMs(`/proc/${pid}/stat`) };
  } catch {
    return undefined;
  }
}

/**
 * CPU ms of each thread of a process, by thread id, with the thread's name (`comm`): what
 * `cpuTimes` sums, split so that a worker thread and V8's platform threads show apart, and
 * the ms each spent runnable but waiting for a CPU (taken by other processes).
 * Undefined where /proc cannot be read.
 */
export function threadCpuTimes(pid) {
  try {
    const threads = new Map();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const dir = `/proc/${pid}/task/${tid}`;
      try {
        // schedstat: ns on a CPU, ns runnable but waiting for one, timeslices.
        const [, waitNs] = readFileSync(`${dir}/schedstat`, "utf8").split(" ").map(Number);
        threads.set(tid, {
          name: readFileSync(`${dir}/comm`, "utf8").trim(),
          ms: statCpuMs(`${dir}/stat`),
          waitMs: waitNs / 1e6,
        });
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    return threads;
  } catch {
    return undefined;
  }
}

/**
 * Starts `cmd args` and resolves once `host:port` accepts a TCP connection.
 * Rejects with NotMeasured (carrying the child's output) if it exits first or is not ready in time.
 */
export async function startServer({ name, cmd, args, port, host = "127.0.0.1", timeoutMs = 15000, cwd }) {
  let output = "";
  let exited = null;
  const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const exitPromise = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      children.delete(child);
      resolve();
    });
    child.once("error", (err) => {
      output += `\n${err.message}`;
      exited = { code: null, signal: null, error: err };
      children.delete(child);
      resolve();
    });
  });
  const collect = (chunk) => {
    output += chunk.toString();
    if (output.length > OUTPUT_LIMIT) output = output.slice(-OUTPUT_LIMIT);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);

  const server = {
    name,
    pid: child.pid,
    output: () => output.trim(),
    exited: () => exited,
    async stop() {
      if (exited) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => {
        if (!exited) child.kill("SIGKILL");
      }, 5000);
      await exitPromise;
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) {
      const how = exited.error
        ? exited.error.message
        : `exit code ${exited.code}${exited.signal ? `, signal ${exited.signal}` : ""}`;
      throw new NotMeasured(`${name} exited during startup (${how})`, output.trim());
    }
    if (await portAccepts(host, port)) return server;
    if (Date.now() > deadline) {
      await server.stop();
      throw new NotMeasured(
        `${name} did not accept connections on ${host}:${port} within ${timeoutMs / 1000}s`,
        output.trim(),
      );
    }
    await sleep(100);
  }
}

/** Stops every child still running and removes every temp dir. */
export async function cleanupAll() {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise((resolve) => {
          const timer = setTimeout(() => {
            child.kill("SIGKILL");
            resolve();
          }, 5000);
          child.once("exit", () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill("SIGTERM");
        }),
    ),
  );
  for (const dir of [...tempDirs]) removeTempDir(dir);
}

function cleanupSync() {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  children.clear();
  for (const dir of [...tempDirs]) removeTempDir(dir);
}

/** Ctrl-C / SIGTERM / process exit: never leave servers or data dirs behind. */
export function installCleanupHandlers() {
  let interrupted = false;
  const onSignal = (signal, code) => {
    if (interrupted) {
      cleanupSync();
      process.exit(code);
    }
    interrupted = true;
    progress(`${signal}: stopping child processes and removing temp dirs`);
    cleanupAll().finally(() => process.exit(code));
  };
  process.on("SIGINT", () => onSignal("SIGINT", 130));
  process.on("SIGTERM", () => onSignal("SIGTERM", 143));
  process.on("SIGHUP", () => onSignal("SIGHUP", 129));
  process.on("exit", cleanupSync);
}

/**
 * Starts our broker: `mq9 serve` on 127.0.0.1:`port` with its data in `dir`, plus `args`.
 * BENCH_MQ9_NODE_ARGS adds node flags for it alone, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
 */
export function startMq9Serve({ name = "mq9 broker", port, dir, args = [] }) {
  return startServer({
    name,
    cmd: process.execPath,
    args: [
      ...(process.env.BENCH_MQ9_NODE_ARGS ?? "").split(" ").filter(Boolean),
      MQ9_CLI,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--data",
      dir,
      ...args,
    ],
    port,
    cwd: REPO_ROOT,
  });
}

/**
 * Pids of PostgreSQL's processes: the postmaster and its live children. Connections come and go
 * during a phase, so the postmaster is also charged its exited children's CPU (see cpuMeter).
 */
export function postgresPids(postmaster) {
  const pids = [-postmaster, postmaster];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}
