// `mq9 serve` in a process of its own, as a user runs it, for the tests of the command itself and
// of what talks to a served broker from outside (other languages, the orchestrator's processes).
import { type ChildProcess, spawn } from "node:child_process";
import { MQ9_CLI } from "./cli.js";

export interface ServeProcess {
  child: ChildProcess;
  /** The broker's port (0 for a cluster node, whose clients connect to the nats-servers). */
  port: number;
  /** The HTTP server's port (/healthz, /metrics, /mcp, /a2a, /api). */
  httpPort: number;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Everything the process wrote to stdout (its JSON log) so far. */
  stdout(): string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string>;
}

export interface SpawnServeOptions {
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** The broker's port (default 0: a free one); the HTTP port is always a free one. */
  port?: number;
  /** How `mq9` is run (default the built CLI under this Node); e.g. `["mq9"]` from PATH. */
  command?: string[];
  /**
   * Largest file the broker may write, in KiB (the shell's `ulimit -f`): a write past it fails
   * with EFBIG, as a write to a full disk fails with ENOSPC.
   */
  fileSizeKiB?: number;
}

/**
 * Spawns `mq9 serve` with JSON logs on free ports, then `args`; resolves once its log says it is
 * ready, with its ports. A process that never gets ready is killed and the promise rejects.
 */
export function spawnServe(args: string[], options: SpawnServeOptions = {}): Promise<ServeProcess> {
  const serve = ["serve", "--port", String(options.port ?? 0), "--http-port", "0", "--log-format", "json"];
  const command = [...(options.command ?? [process.execPath, MQ9_CLI]), ...serve, ...args];
  // SIGXFSZ is ignored so that the write fails instead of the signal killing the process.
  const limited =
    options.fileSizeKiB === undefined
      ? command
      : ["bash", "-c", `trap '' XFSZ; ulimit -f ${options.fileSizeKiB}; exec "$@"`, "bash", ...command];
  const child = spawn(limited[0], limited.slice(1), {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  let out = "";
  child.stderr!.on("data", (chunk) => {
    err += chunk;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
  return new Promise((resolve, reject) => {
    // Generous: a loaded machine can take tens of seconds to start one.
    const giveUp = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mq9 serve was not ready within 60 s: ${err}`));
    }, 60_000);
    let scanned = 0;
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const end = out.lastIndexOf("\n");
      if (end < scanned) return;
      const lines = out.slice(scanned, end).split("\n");
      scanned = end + 1;
      for (const line of lines) {
        if (!/"msg":"mq9 (broker|cluster node \S+) ready/.test(line)) continue;
        const { port, httpPort } = JSON.parse(line) as { port?: number; httpPort?: number };
        clearTimeout(giveUp);
        resolve({
          child,
          port: port ?? 0,
          httpPort: httpPort ?? 0,
          stderr: () => err,
          stdout: () => out,
          exited,
        });
        return;
      }
    });
    void exited.then((code) => {
      clearTimeout(giveUp);
      reject(new Error(`mq9 serve exited (${code}) before it was ready: ${err}`));
    });
  });
}
