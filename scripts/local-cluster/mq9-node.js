// One `mq9 serve --cluster` process for tests, benchmarks and `npm run cluster:up`.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./free-port.js";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const MQ9_CLI = join(REPO_ROOT, "packages/cli/dist/main.js");

const READY_LINE = /mq9 cluster node \S+ ready:|mq9 broker ready on/;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a cluster node and resolves once its /healthz answers 200 and, when its output is
 * captured at info level or below, once it has logged that it is ready (the line follows the
 * HTTP port by a moment). Options: nodeId (none: the
 * node's default id), nats (URLs;
 * without them, one broker on PostgreSQL with its own listener, on `port`), postgres (URL),
 * httpPort, args (extra flags), env, nodeArgs (node flags), dataDir (its working folder),
 * logFile (a detached process that logs there and outlives this one), cli (another build's
 * packages/cli/dist/main.js, for A/B).
 * Returns { nodeId, pid, httpPort, port (without nats), output(), kill(signal), stop(), exited }.
 */
export async function startMq9Node(options) {
  const httpPort = options.httpPort ?? (await freePort());
  const port = options.nats ? undefined : (options.port ?? (await freePort()));
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), `mq9-node-${options.nodeId ?? "default"}-`));
  mkdirSync(dataDir, { recursive: true });
  const attach = options.nats
    ? [
        "--cluster",
        "--nats",
        options.nats.join(","),
        ...(options.nodeId ? ["--node-id", options.nodeId] : []),
      ]
    : ["--port", String(port)];
  const args = [
    ...(options.nodeArgs ?? []),
    options.cli ?? MQ9_CLI,
    "serve",
    ...attach,
    "--postgres",
    options.postgres,
    "--http-port",
    String(httpPort),
    "--log-format",
    "json",
    ...(options.args ?? []),
  ];
  let output = "";
  let child;
  if (options.logFile) {
    // Outlives this process (npm run cluster:up): output to a file, not a pipe.
    const log = openSync(options.logFile, "a");
    child = spawn(process.execPath, args, {
      cwd: options.cwd ?? dataDir,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", log, log],
      detached: true,
    });
    child.unref();
  } else {
    child = spawn(process.execPath, args, {
      cwd: options.cwd ?? dataDir,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (chunk) => {
      output = (output + chunk.toString()).slice(-64_000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
  }
  const exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (err) => {
      output += `\n${err.message}`;
      resolve({ code: null, signal: null });
    });
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const node = {
    nodeId: options.nodeId,
    pid: child.pid,
    httpPort,
    port,
    dataDir,
    exited,
    output: () => output,
    async kill(signal = "SIGKILL") {
      if (gone) return;
      child.kill(signal);
      await exited;
    },
    async stop() {
      if (gone) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  // The ready line is an info line: not there in a log file read elsewhere, nor below info.
  const level = (options.args ?? [])[(options.args ?? []).indexOf("--log-level") + 1];
  const waitsForReadyLine =
    !options.logFile &&
    !((options.args ?? []).includes("--log-level") && /^(warn|error|fatal|silent)$/.test(level));
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (gone) throw new Error(`mq9 node ${options.nodeId} exited during start:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
      if (res.status === 200 && (!waitsForReadyLine || READY_LINE.test(output))) return node;
    } catch {}
    if (Date.now() > deadline) {
      await node.kill();
      throw new Error(`mq9 node ${options.nodeId} was not healthy in time:\n${output}`);
    }
    await sleep(200);
  }
}
