// `npm run build:hnsw-native` (opt-in; the tests' global setup runs it): compiles hnswlib-node once more, for this machine's own CPU
// (-march=native: AVX2 / AVX-512 distance kernels), into dist/hnswlib-native/. Optional: when it
// cannot be built (no compiler, no node-gyp, not Linux) the vector store keeps npm's generic build.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dist = new URL("../dist/", import.meta.url);
const modulePath = fileURLToPath(new URL("vectors/hnswlib-build.js", dist));
if (!existsSync(modulePath)) {
  process.stderr.write("build-hnsw-native: run tsc first (packages/registry/dist is missing)\n");
  process.exit(1);
}
const {
  cpuFlags,
  installedHnswlibVersion,
  nativeAddonPath,
  nativeBuildDir,
  nativeBuildWanted,
  nativeManifestPath,
  nativeSkippedPath,
} = await import(new URL("vectors/hnswlib-build.js", dist).href);

const say = (line) => process.stderr.write(`[hnswlib native] ${line}\n`);
/** Leaves the reason where the broker's tests and operators can read it, and keeps the generic build. */
const skip = (reason) => {
  say(`skipped: ${reason}; the generic build is used`);
  mkdirSync(nativeBuildDir, { recursive: true });
  rmSync(nativeAddonPath, { force: true });
  writeFileSync(nativeSkippedPath, `${reason}\n`);
  process.exit(0);
};
const compilerFlags = "-O3 -march=native";
const version = installedHnswlibVersion();
const flags = cpuFlags();
if (!nativeBuildWanted()) skip("MQ9_HNSW_NATIVE=0");
if (!version) skip("hnswlib-node is not installed");
if (!flags || process.platform !== "linux") skip("only built on Linux");
if (existsSync(nativeAddonPath) && existsSync(nativeManifestPath)) {
  const manifest = JSON.parse(readFileSync(nativeManifestPath, "utf8"));
  const same =
    manifest.hnswlibVersion === version && manifest.cpuFlags.join(" ") === [...flags].sort().join(" ");
  if (same) process.exit(0);
}

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve("hnswlib-node/package.json"));
const nodeGyp = findNodeGyp();
if (!nodeGyp) skip("node-gyp not found");
// Built beside the package's own node_modules so binding.gyp finds node-addon-api.
const work = mkdtempSync(join(dirname(packageDir), ".hnswlib-native-"));
try {
  for (const part of ["binding.gyp", "package.json", "src"])
    cpSync(join(packageDir, part), join(work, part), { recursive: true });
  const started = Date.now();
  const built = spawnSync(process.execPath, [nodeGyp, "rebuild"], {
    cwd: work,
    env: { ...process.env, CXXFLAGS: `${process.env.CXXFLAGS ?? ""} ${compilerFlags}`.trim() },
    encoding: "utf8",
  });
  if (built.status !== 0) {
    const tail = `${built.stdout}\n${built.stderr}`.trim().split("\n").slice(-3).join(" | ");
    rmSync(work, { recursive: true, force: true }); // skip() exits before the finally below
    skip(`the compile failed (${tail})`);
  }
  mkdirSync(nativeBuildDir, { recursive: true });
  cpSync(join(work, "build", "Release", "addon.node"), nativeAddonPath);
  const manifest = {
    hnswlibVersion: version,
    platform: process.platform,
    arch: process.arch,
    cpuFlags: [...flags].sort(),
    compilerFlags,
  };
  writeFileSync(nativeManifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  rmSync(nativeSkippedPath, { force: true });
  say(
    `hnswlib-node ${version} compiled with ${compilerFlags} into ${nativeAddonPath} (${((Date.now() - started) / 1000).toFixed(0)} s)`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

function findNodeGyp() {
  // npm names its own node-gyp to the scripts it runs; outside npm, look beside this node.
  const candidates = [
    process.env.npm_config_node_gyp,
    join(
      dirname(process.execPath),
      "..",
      "lib",
      "node_modules",
      "npm",
      "node_modules",
      "node-gyp",
      "bin",
      "node-gyp.js",
    ),
  ];
  return candidates.find((c) => c && existsSync(c));
}
