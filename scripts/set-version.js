#!/usr/bin/env node
// `node scripts/set-version.js 0.2.0`: one version for every package of the workspace, and every
// dependency of one of ours on another set to exactly that version (what `npm pack` then ships).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const version = process.argv[2];
if (!version || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
  process.stderr.write("usage: node scripts/set-version.js <version>   (semver, e.g. 0.2.0 or 0.2.0-rc.1)\n");
  process.exit(2);
}
const root = resolve(import.meta.dirname, "..");
const read = (file) => JSON.parse(readFileSync(file, "utf8"));
const write = (file, manifest) => writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);

for (const dir of read(join(root, "package.json")).workspaces) {
  const file = join(root, dir, "package.json");
  const manifest = read(file);
  manifest.version = version;
  for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
    for (const name of Object.keys(manifest[field] ?? {})) {
      if (name.startsWith("@mq9/")) manifest[field][name] = version;
    }
  }
  write(file, manifest);
}
execFileSync("npm", ["install", "--package-lock-only", "--no-audit", "--no-fund"], {
  cwd: root,
  stdio: "inherit",
});
process.stderr.write(`every package is at ${version}; the lock file follows\n`);
