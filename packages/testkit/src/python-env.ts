// The Python virtualenv of the tests that run real Python programs against mq9 (Hermes Agent,
// the published Python clients), made from integrations/hermes/requirements-test.txt.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const requirements = join(repo, "integrations/hermes/requirements-test.txt");
/** The virtualenv, inside the repo (git-ignored), made once and reused while the requirements stay the same. */
export const VENV = join(repo, ".cache/hermes-venv");
const LOCK = `${VENV}.lock`;
const STAMP = join(VENV, ".requirements-sha256");

/** The interpreter the venv is made with: MQ9_TEST_PYTHON, else python3.11, else python3. */
function basePython(): string | undefined {
  for (const candidate of [process.env.MQ9_TEST_PYTHON, "python3.11", "python3"]) {
    if (!candidate) continue;
    const probe = spawnSync(candidate, ["-c", "import sys, venv; assert sys.version_info >= (3, 11)"]);
    if (probe.status === 0) return candidate;
  }
  return undefined;
}

/** Why the Python tests cannot run here (no Python 3.11), or undefined when they can. */
export function pythonMissing(): string | undefined {
  if (existsSync(join(VENV, "bin/python")) && readStamp() === requirementsHash()) return undefined;
  return basePython() ? undefined : "no Python >= 3.11 with venv on PATH (set MQ9_TEST_PYTHON)";
}

/** In CI a missing Python is a failure, elsewhere a stated skip. */
export function skipWithoutPython(): boolean {
  const missing = pythonMissing();
  if (missing && process.env.CI) throw new Error(`the Hermes/Python tests need Python: ${missing}`);
  if (missing) process.stderr.write(`skipping the Hermes/Python tests: ${missing}\n`);
  return missing !== undefined;
}

const requirementsHash = () => createHash("sha256").update(readFileSync(requirements)).digest("hex");
const readStamp = () => (existsSync(STAMP) ? readFileSync(STAMP, "utf8").trim() : "");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The venv's python, after creating the venv and installing the pinned requirements if
 * that was not done yet. Test files run in parallel: one installs under a lock directory,
 * the others wait for it.
 */
export async function ensurePythonEnv(): Promise<string> {
  const python = join(VENV, "bin/python");
  const want = requirementsHash();
  for (;;) {
    if (existsSync(python) && readStamp() === want) return python;
    // A fresh clone has no .cache yet: the lock directory needs its parent.
    mkdirSync(join(repo, ".cache"), { recursive: true });
    try {
      mkdirSync(LOCK, { recursive: false });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      // Someone else installs; a lock older than 20 minutes belongs to a run that died.
      let age = 0;
      try {
        age = Date.now() - statSync(LOCK).mtimeMs;
      } catch {
        // Gone already: its installer finished; look again.
      }
      if (age > 20 * 60_000) rmSync(LOCK, { recursive: true, force: true });
      await sleep(2_000);
      continue;
    }
    try {
      if (existsSync(python) && readStamp() === want) return python;
      install(want);
      return python;
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
}

function install(hash: string): void {
  const base = basePython();
  if (!base) throw new Error("cannot make the test virtualenv: no Python >= 3.11 with venv on PATH");
  const log = (line: string) => process.stderr.write(`[hermes venv] ${line}\n`);
  log(`creating ${VENV} with ${base} (once; later runs reuse it)`);
  rmSync(VENV, { recursive: true, force: true });
  mkdirSync(join(repo, ".cache"), { recursive: true });
  execFileSync(base, ["-m", "venv", VENV], { stdio: ["ignore", "inherit", "inherit"] });
  log(`pip install -r ${requirements} (about a minute)`);
  execFileSync(
    join(VENV, "bin/python"),
    [
      "-m",
      "pip",
      "install",
      "--disable-pip-version-check",
      "--no-input",
      "--progress-bar",
      "off",
      "-r",
      requirements,
    ],
    { stdio: ["ignore", "inherit", "inherit"], timeout: 15 * 60_000 },
  );
  writeFileSync(STAMP, `${hash}\n`);
  log("ready");
}
