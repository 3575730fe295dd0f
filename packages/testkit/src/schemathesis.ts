// schemathesis, run as a user would run it against mq9's REST API: from its pinned venv,
// against the served OpenAPI document, every check on.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensurePythonEnv } from "./python-env.js";

/** What a schemathesis run printed and how it ended (0: no failure, no error). */
export interface SchemathesisRun {
  code: number;
  output: string;
}

/** How much a schemathesis run tries; the seed is fixed, so a run is the same each time. */
export interface SchemathesisOptions {
  /** Examples per operation (`--max-examples`). */
  maxExamples: number;
  /** Hypothesis' seed (default 20240601). */
  seed?: number;
  /** Seconds one request may take (default 10). */
  requestTimeoutSeconds?: number;
  /** How long the whole run may take before it is killed (default 8 minutes). */
  timeoutMs?: number;
}

/**
 * Fuzzes the API whose OpenAPI document is at `documentUrl` with every check
 * (`schemathesis run --checks all`) from the pinned `schemathesis` venv, made first if needed.
 */
export async function runSchemathesis(
  documentUrl: string,
  options: SchemathesisOptions,
): Promise<SchemathesisRun> {
  const python = await ensurePythonEnv("schemathesis");
  const cli = join(python, "..", "schemathesis");
  // Its own working directory: schemathesis may leave files (reports, caches) where it runs.
  const cwd = mkdtempSync(join(tmpdir(), "mq9-schemathesis-"));
  const args = [
    "run",
    documentUrl,
    "--checks",
    "all",
    "--seed",
    String(options.seed ?? 20240601),
    "--max-examples",
    String(options.maxExamples),
    // One worker: the run stays the same from run to run, and parallel workers of this
    // version can fail inside hypothesis ("AST constructor recursion depth mismatch").
    "--workers",
    "1",
    "--request-timeout",
    String(options.requestTimeoutSeconds ?? 10),
    "--generation-database",
    "none",
    "--no-color",
  ];
  try {
    return await new Promise((resolve) => {
      execFile(
        cli,
        args,
        {
          cwd,
          timeout: options.timeoutMs ?? 8 * 60_000,
          maxBuffer: 64 * 1024 * 1024,
          env: { ...process.env, NO_COLOR: "1", COLUMNS: "120" },
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
          resolve({ code, output: `${stdout}${stderr}` });
        },
      );
    });
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}
