import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SERVE_ON_FREE_PORTS } from "@mq9/testkit";
import { CLI, run } from "./cli-run.js";

export { CLI };

export interface ServeProcess {
  child: ChildProcess;
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

export interface ServeLimits {
  /**
   * Largest file the broker may write, in KiB (the shell's `ulimit -f`): a write past it fails
   * with EFBIG, as a write to a full disk fails with ENOSPC.
   */
  fileSizeKiB?: number;
}

export { SERVE_ON_FREE_PORTS };

/** Spawns `mq9 serve` (the built CLI) with JSON logs and resolves when it is ready, with its port. */
export function spawnServe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  limits: ServeLimits = {},
): Promise<ServeProcess> {
  const command = [process.execPath, CLI, ...SERVE_ON_FREE_PORTS, ...args];
  // SIGXFSZ is ignored so that the write fails instead of the signal killing the process.
  const limited =
    limits.fileSizeKiB === undefined
      ? command
      : ["bash", "-c", `trap '' XFSZ; ulimit -f ${limits.fileSizeKiB}; exec "$@"`, "bash", ...command];
  const child = spawn(limited[0], limited.slice(1), {
    env: { ...process.env, ...env },
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
    // A broker that never gets ready must not outlive the test that started it (generous: a
    // loaded machine can take tens of seconds to start one).
    const giveUp = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mq9 serve was not ready within 60 s: ${err}`));
    }, 60_000);
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      for (const line of out.split("\n")) {
        if (!line.includes("broker ready")) continue;
        const { port, httpPort } = JSON.parse(line) as { port?: number; httpPort?: number };
        if (port) {
          clearTimeout(giveUp);
          resolve({ child, port, httpPort: httpPort ?? 0, stderr: () => err, stdout: () => out, exited });
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(giveUp);
      reject(new Error(`mq9 serve exited (${code}) before it was ready: ${err}`));
    });
  });
}

/** Runs the CLI to completion and returns its exit code and output. */
export const runCli = (args: string[], env: NodeJS.ProcessEnv = {}) => run(args, env);

export function tempDir(prefix = "mq9-cli-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
