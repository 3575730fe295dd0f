#!/usr/bin/env node
// `npm run bench:install`: what installing mq9 costs, the two ways. Figures only, no asserts.
//  1. The packages: this checkout's build packed, served as the @mq9 scope's registry on
//     127.0.0.1, and `npm install -g @mq9/cli` into an empty prefix from an empty npm cache (so
//     every third-party package comes from the npm registry); split into the install without
//     install scripts and the native builds; the disk it takes; `mq9 serve` to its ready line.
//  2. A fresh clone of HEAD: `npm ci` (split the same way, plus the build of our packages), then
//     `npm start` to its ready line, and the size of node_modules.
// Progress goes to stderr, the figures to stdout.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startReleaseRegistry } from "../scripts/release-registry.js";

const root = resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    only: { type: "string" },
    "ready-runs": { type: "string", default: "3" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  process.stdout.write(`usage: npm run bench:install [-- --only packages|clone] [-- --ready-runs N]

Measures the packaged install (npm install -g @mq9/cli from this checkout's packed build) and a
fresh clone's npm ci && npm start, each from an empty npm cache. Needs the npm registry for
third-party packages; takes about ten minutes on two cores.
`);
  process.exit(0);
}
const readyRuns = Number(values["ready-runs"]);
const progress = (line) => process.stderr.write(`[install bench] ${line}\n`);
const work = mkdtempSync(join(tmpdir(), "mq9-install-bench-"));
const children = [];
process.on("exit", () => {
  for (const child of children) {
    try {
      if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  rmSync(work, { recursive: true, force: true });
});

/** The environment of a user's shell: none of what `npm run` adds. */
function userEnv(extra) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !name.toLowerCase().startsWith("npm_") && !name.startsWith("MQ9_"),
    ),
  );
  env.PATH = (process.env.PATH ?? "")
    .split(":")
    .filter((dir) => !dir.includes("node_modules/.bin"))
    .join(":");
  return {
    ...env,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    ...extra,
  };
}

/**
 * Runs a command to its end; seconds it took. Not synchronous: the release registry answers npm
 * from this process.
 */
async function timed(label, command, args, options) {
  progress(`${label} …`);
  const started = performance.now();
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"], ...options });
  const code = await new Promise((done) => child.once("exit", done));
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${code}`);
  const seconds = (performance.now() - started) / 1000;
  progress(`${label}: ${seconds.toFixed(1)} s`);
  return seconds;
}

/** Bytes under a folder (files only, symlinks not followed). */
function diskBytes(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    total += diskBytes(join(path, entry.name));
  }
  return total;
}
const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;

/** Starts a command and resolves with the seconds to a line matching `ready`; the process is left running. */
function untilReady(command, args, options, ready) {
  return new Promise((resolveReady, reject) => {
    const started = performance.now();
    // A group of its own: `npm start` runs the broker as a grandchild, which must end with it.
    const child = spawn(command, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let said = "";
    const seen = (chunk) => {
      said += chunk;
      if (ready.test(said)) resolveReady({ seconds: (performance.now() - started) / 1000, child });
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.once("exit", (code) =>
      reject(new Error(`${command} ${args.join(" ")} exited with ${code}:\n${said}`)),
    );
  });
}

async function stop(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  process.kill(-child.pid, "SIGTERM");
  await exited;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const READY = /broker ready on/;
const say = (line) => process.stdout.write(`${line}\n`);

async function measurePackages() {
  const release = join(work, "release");
  progress("packing this checkout's build");
  execFileSync(process.execPath, ["scripts/pack.js", "--no-build", "--out", release], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const registry = await startReleaseRegistry(release);
  const prefix = join(work, "prefix");
  const env = userEnv({
    "npm_config_@mq9:registry": registry.url,
    npm_config_cache: join(work, "npm-cache-packages"),
    npm_config_prefix: prefix,
  });
  const install = await timed(
    "npm install -g @mq9/cli --ignore-scripts (empty cache)",
    "npm",
    ["install", "-g", "--ignore-scripts", "@mq9/cli"],
    {
      cwd: work,
      env,
    },
  );
  const native = await timed(
    "npm rebuild -g (the native modules' install scripts)",
    "npm",
    ["rebuild", "-g"],
    {
      cwd: work,
      env,
    },
  );
  await registry.close();

  const cli = join(prefix, "lib/node_modules/@mq9/cli");
  const modules = join(cli, "node_modules");
  const total = diskBytes(prefix);
  const embedderRuntime = diskBytes(join(modules, "@energetic-ai"));
  const staticTable = diskBytes(join(modules, "@mq9/registry/dist/static-table"));
  const sqlite = diskBytes(join(modules, "better-sqlite3"));
  const packagesCount = execFileSync("npm", ["ls", "-g", "--all", "--parseable"], { env, encoding: "utf8" })
    .split("\n")
    .filter(Boolean).length;

  const serveDir = join(work, "serve");
  mkdirSync(serveDir);
  const readies = [];
  for (let run = 0; run < readyRuns; run++) {
    rmSync(join(serveDir, "mq9-data"), { recursive: true, force: true });
    const { seconds, child } = await untilReady(
      join(prefix, "bin/mq9"),
      ["serve", "--port", "0", "--http-port", "0"],
      { cwd: serveDir, env: userEnv({}) },
      READY,
    );
    readies.push(seconds);
    await stop(child);
  }
  say(
    "## packaged install: npm install -g @mq9/cli (ours from the packed build, third-party from the npm registry, empty cache)",
  );
  say(`install without install scripts    ${install.toFixed(1)} s`);
  say(
    `native builds (npm rebuild -g)     ${native.toFixed(1)} s   (better-sqlite3 from source where its prebuilt binary cannot be downloaded)`,
  );
  say(`total                              ${(install + native).toFixed(1)} s`);
  say(`disk                               ${mb(total)} in ${packagesCount} packages`);
  say(
    `  default embedder runtime+weights ${mb(embedderRuntime)}   (@energetic-ai: USE-lite on a pure-JS TensorFlow)`,
  );
  say(`  static embedder table            ${mb(staticTable)}`);
  say(`  better-sqlite3 (with its build)  ${mb(sqlite)}`);
  say(`  without embedder runtime, table  ${mb(total - embedderRuntime - staticTable)}`);
  say(
    `mq9 serve to ready (default embedder, fresh data dir)  median ${median(readies).toFixed(2)} s of ${readies.map((s) => s.toFixed(2)).join(", ")}`,
  );
}

async function measureClone() {
  const clone = join(work, "clone");
  progress("cloning HEAD");
  execFileSync("git", ["clone", "--quiet", "--no-hardlinks", root, clone]);
  const env = userEnv({ npm_config_cache: join(work, "npm-cache-clone") });
  const ci = await timed("npm ci --ignore-scripts (empty cache)", "npm", ["ci", "--ignore-scripts"], {
    cwd: clone,
    env,
  });
  const native = await timed("npm rebuild (native modules' install scripts)", "npm", ["rebuild"], {
    cwd: clone,
    env,
  });
  const build = await timed(
    "npm run build (our packages: tsc, dashboard)",
    "npm",
    ["run", "build", "--silent"],
    {
      cwd: clone,
      env,
    },
  );
  const { seconds: start, child } = await untilReady(
    "npm",
    ["start"],
    { cwd: clone, env: { ...env, MQ9_PORT: "0", MQ9_HTTP_PORT: "0" } },
    READY,
  );
  await stop(child);
  const size = diskBytes(join(clone, "node_modules"));
  say("## fresh clone: npm ci && npm start (empty cache)");
  say(`npm ci without install scripts     ${ci.toFixed(1)} s`);
  say(
    `native builds (npm rebuild)        ${native.toFixed(1)} s   (better-sqlite3, hnswlib-node from source)`,
  );
  say(`build of our packages              ${build.toFixed(1)} s`);
  say(`npm start to ready                 ${start.toFixed(1)} s`);
  say(`total                              ${(ci + native + build + start).toFixed(1)} s`);
  say(`node_modules                       ${mb(size)}`);
}

const load = () =>
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`;
say(`# mq9 install figures — Node ${process.version}, ${load()}`);
if (values.only !== "clone") await measurePackages();
if (values.only !== "packages") await measureClone();
say(`# done, ${load()}`);
process.exit(0);
