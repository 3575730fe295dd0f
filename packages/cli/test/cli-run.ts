import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MQ9_CLI } from "@mq9/testkit";

/** The built CLI entry point that every CLI test runs. */
export const CLI = MQ9_CLI;

/**
 * An empty config folder: a test's command reads no context the developer saved (mq9 context),
 * unless the test gives MQ9_CONFIG_HOME itself.
 */
const NO_CONTEXTS = { MQ9_CONFIG_HOME: mkdtempSync(join(tmpdir(), "mq9-config-")) };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI to completion, optionally writing `input` to its stdin. */
export function run(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string | Uint8Array,
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...NO_CONTEXTS, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    // "close", not "exit": exit can come before the last output is read from the pipes.
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

export interface RunningCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | string>;
}

/** Starts the built CLI and returns at once (for long-running commands such as consume). */
export function start(args: string[], env: NodeJS.ProcessEnv = {}): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...NO_CONTEXTS, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c) => {
    out += c;
  });
  child.stderr!.on("data", (c) => {
    err += c;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? -1));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Parses JSON-lines output. */
export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
