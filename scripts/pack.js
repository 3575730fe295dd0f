#!/usr/bin/env node
// `npm run pack`: the release tarballs, one per public package, into release/ (or --out DIR).
// A clean build first (stale files of removed sources must not ship), then the static embedder's
// table (our build product: it ships inside @mq9/registry, so no user machine distils it), then
// `npm pack` of each package after checking that it depends on its siblings by exact version.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const root = resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    out: { type: "string", default: "release" },
    "no-build": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  process.stdout.write(`usage: npm run pack [-- --out DIR] [-- --no-build]

Writes one tarball per public package into DIR (default: release/).
  --out DIR    where the tarballs go (emptied of older mq9 tarballs first)
  --no-build   pack the current build instead of a clean one (the tests do: they run beside it)
`);
  process.exit(0);
}

const say = (line) => process.stderr.write(`[pack] ${line}\n`);
const run = (command, args, options = {}) =>
  execFileSync(command, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"], ...options });

const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const manifests = rootManifest.workspaces
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) }))
  .filter(({ manifest }) => !manifest.private);

// Our packages are released together, at one version, each naming its siblings by that version.
const version = manifests[0].manifest.version;
const problems = [];
for (const { dir, manifest } of manifests) {
  if (manifest.version !== version) problems.push(`${dir}: version ${manifest.version}, not ${version}`);
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
    for (const [name, range] of Object.entries(manifest[field] ?? {})) {
      if (name.startsWith("@mq9/") && range !== version)
        problems.push(`${dir}: ${field} ${name} is '${range}', not '${version}'`);
    }
  }
}
if (problems.length > 0) {
  say(
    `refused: the packages do not share one version (scripts/set-version.js fixes that):\n  ${problems.join("\n  ")}`,
  );
  process.exit(1);
}

if (!values["no-build"]) {
  say("clean build");
  // The distilled table takes minutes to make and does not depend on the TypeScript: it is kept.
  const table = join(root, "packages/registry/dist/static-table");
  const kept = join(root, ".cache/static-table-kept");
  rmSync(kept, { recursive: true, force: true });
  if (existsSync(table)) {
    mkdirSync(join(root, ".cache"), { recursive: true });
    renameSync(table, kept);
  }
  for (const { dir } of manifests) {
    rmSync(join(root, dir, "dist"), { recursive: true, force: true });
    rmSync(join(root, dir, "tsconfig.tsbuildinfo"), { force: true });
  }
  if (existsSync(kept)) {
    mkdirSync(join(root, "packages/registry/dist"), { recursive: true });
    renameSync(kept, table);
  }
  run("npm", ["run", "build", "--silent"]);
}
say("the static embedder's table");
run(process.execPath, ["packages/registry/scripts/build-static-table.mjs"]);

const out = resolve(root, values.out);
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) if (/^mq9-.*\.tgz$/.test(name)) rmSync(join(out, name));
for (const { dir, manifest } of manifests) {
  if (!existsSync(join(root, dir, "dist"))) {
    say(`refused: ${dir}/dist is missing; run without --no-build`);
    process.exit(1);
  }
  run("npm", ["pack", "--silent", "--pack-destination", out, "-w", manifest.name], { stdio: "ignore" });
}

const tarballs = readdirSync(out)
  .filter((name) => /^mq9-.*\.tgz$/.test(name))
  .sort();
const size = (name) => `${(statSync(join(out, name)).size / 1024).toFixed(0)} KiB`;
process.stdout.write(`${tarballs.map((name) => `${join(values.out, name)}  ${size(name)}`).join("\n")}\n`);
say(
  `${tarballs.length} packages at version ${version}; install the CLI with: npm install -g ./${values.out}/*.tgz`,
);
