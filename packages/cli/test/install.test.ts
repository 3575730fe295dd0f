import { execFile } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { delimiter, join, sep } from "node:path";
import { promisify } from "node:util";
import { Broker } from "@mq9/broker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { REPO_ROOT } from "./doc-examples.js";

const exec = promisify(execFile);

/**
 * The environment of a user's shell: without the npm_* settings `npm test` hands its scripts
 * (prefix, local prefix …) and without the node_modules/.bin folders npm puts on PATH, where this
 * checkout's own `mq9` would be found instead of the clone's.
 */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith("npm_") && !name.startsWith("MQ9_")) env[name] = value;
  }
  env.PATH = userPath();
  return { ...env, ...extra };
}

function userPath(): string {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.includes(`node_modules${sep}.bin`))
    .join(delimiter);
}

async function sh(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()) {
  try {
    return await exec(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${stdout ?? ""}\n${stderr ?? ""}`);
  }
}

const version = JSON.parse(readFileSync(join(REPO_ROOT, "packages/cli/package.json"), "utf8")).version;

// A fresh clone of what is committed (uncommitted changes of a working tree are not in it).
describe("install from a fresh clone, as the README says", () => {
  let broker: Broker;
  beforeAll(async () => {
    broker = await Broker.start({ port: 0, dataDir: tempDir() });
  });
  afterAll(() => broker.close());

  // The clone with its node_modules is over a gigabyte: it goes when the test ends.
  let dir: string | undefined;
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("npm ci, then npx mq9 in the checkout, and npm link puts mq9 on PATH", async () => {
    const root = tempDir("mq9-clone-");
    dir = root;
    const clone = join(root, "mq9");
    await sh("git", ["clone", "--quiet", "--no-hardlinks", REPO_ROOT, clone], root);
    // Install scripts are left out: compiling better-sqlite3 from source takes minutes on this
    // machine (a plain npm ci also builds the packages, in the root's prepare script).
    await sh("npm", ["ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], clone);
    // Whatever npm ci built of the CLI goes: the launcher builds what is missing on first use.
    rmSync(join(clone, "packages/cli/dist"), { recursive: true, force: true });
    rmSync(join(clone, "packages/cli/tsconfig.tsbuildinfo"), { force: true });
    const first = await sh(process.execPath, ["bin/mq9.js", "--version"], clone);
    expect(first.stdout).toBe(`${version}\n`);
    expect(first.stderr).toContain("building the packages first");
    // npx runs the checkout's own bin, from its root or any folder in it.
    for (const cwd of [clone, join(clone, "docs")]) {
      const npx = await sh("npx", ["mq9", "--version"], cwd);
      expect(npx.stdout).toBe(`${version}\n`);
      expect(npx.stderr).not.toContain("building");
    }

    // The one command that puts mq9 on PATH, into a prefix of our own instead of the user's.
    const prefix = join(root, "prefix");
    await sh("npm", ["link", "--no-audit", "--no-fund"], clone, cleanEnv({ npm_config_prefix: prefix }));
    const onPath = cleanEnv({ PATH: `${join(prefix, "bin")}${delimiter}${userPath()}` });
    const outside = tempDir("mq9-elsewhere-");
    expect((await sh("mq9", ["--version"], outside, onPath)).stdout).toBe(`${version}\n`);
    const created = await sh(
      "mq9",
      ["mailbox", "create", "fresh.clone.inbox", "--server", `mq9://127.0.0.1:${broker.port}`],
      outside,
      onPath,
    );
    expect(created.stdout).toBe("fresh.clone.inbox\n");
  }, 1_200_000);
});
