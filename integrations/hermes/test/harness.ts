import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MQ9_CLI as CLI, spawnServe } from "@mq9/testkit";

export const PYTHON_DIR = fileURLToPath(new URL("./python/", import.meta.url));
export const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * A bin directory with an `mq9` launcher for the built CLI, as a user's install puts `mq9`
 * on PATH (`npm link`, or a launcher of their own): everything these tests start by the
 * name `mq9` goes through it.
 */
export function mq9OnPath(): { env: NodeJS.ProcessEnv; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "mq9-bin-"));
  const launcher = join(dir, "mq9");
  writeFileSync(launcher, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(launcher, 0o755);
  return { dir, env: { ...process.env, PATH: `${dir}:${process.env.PATH}` } };
}

/** A process whose stdout is JSON lines (other lines are ignored). */
export class JsonLines {
  readonly lines: Record<string, unknown>[] = [];
  stderr = "";
  private waiters: (() => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    let buffer = "";
    child.stdout!.on("data", (chunk) => {
      buffer += chunk;
      let at = buffer.indexOf("\n");
      while (at >= 0) {
        const line = buffer.slice(0, at).trim();
        buffer = buffer.slice(at + 1);
        if (line.startsWith("{")) {
          try {
            this.lines.push(JSON.parse(line));
          } catch {
            // a line of Hermes' own output that happens to start with a brace
          }
        }
        at = buffer.indexOf("\n");
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    child.stderr!.on("data", (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
    void this.exited.then(() => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** Resolves with the first line (from `from` on) that `match` accepts. */
  async next(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs = 500_000,
    from = 0,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.slice(from).find(match);
      if (found) return found;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `no matching line (exit ${this.child.exitCode}); stderr:\n${this.stderr.slice(-3000)}`,
        );
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 1_000);
      });
    }
  }

  step(name: string, timeoutMs?: number, from?: number) {
    return this.next((line) => line.step === name, timeoutMs, from);
  }

  write(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  async close(): Promise<void> {
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Runs one of the Python scripts in test/python with the venv's interpreter. */
export function python(py: string, script: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return new JsonLines(
    spawn(py, [join(PYTHON_DIR, script), ...args], {
      cwd: PYTHON_DIR,
      env: { ...env, PYTHONUNBUFFERED: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    }),
  );
}

export interface Mq9Serve {
  url: string;
  http: string;
  port: number;
  close(): Promise<void>;
}

/** `mq9 serve` started by name from PATH, on free ports, with a fresh data directory. */
export async function mq9Serve(env: NodeJS.ProcessEnv, extra: string[] = []): Promise<Mq9Serve> {
  const data = mkdtempSync(join(tmpdir(), "mq9-hermes-data-"));
  const served = await spawnServe(["--data", data, ...extra], { env, command: ["mq9"] });
  return {
    url: `mq9://127.0.0.1:${served.port}`,
    http: `http://127.0.0.1:${served.httpPort}`,
    port: served.port,
    async close() {
      served.child.kill("SIGTERM");
      await served.exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}

export function tempHome(prefix = "hermes-home-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(dir, { recursive: true });
  return dir;
}
