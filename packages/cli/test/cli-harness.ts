import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SERVE_ON_FREE_PORTS, type ServeProcess, spawnServe as spawnServeProcess } from "@mq9/testkit";
import { CLI, run } from "./cli-run.js";

export type { ServeProcess };
export { CLI };

export interface ServeLimits {
  /** Largest file the broker may write, in KiB (the shell's `ulimit -f`): see `SpawnServeOptions`. */
  fileSizeKiB?: number;
}

export { SERVE_ON_FREE_PORTS };

/** Spawns `mq9 serve` (the built CLI) with JSON logs and resolves when it is ready, with its port. */
export function spawnServe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  limits: ServeLimits = {},
): Promise<ServeProcess> {
  return spawnServeProcess(args, { env, fileSizeKiB: limits.fileSizeKiB });
}

/** Runs the CLI to completion and returns its exit code and output. */
export const runCli = (args: string[], env: NodeJS.ProcessEnv = {}) => run(args, env);

export function tempDir(prefix = "mq9-cli-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A command's `--json` output: one JSON object per line. */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** SIGTERM to a spawned `mq9 serve`, then waits for it to exit. */
export async function stopServe(serve: ServeProcess): Promise<void> {
  serve.child.kill("SIGTERM");
  await serve.exited;
}
