// What a user who never clones the repository gets: the packages as npm installs them from a
// registry (ours served from freshly packed tarballs, the @mq9 scope only), with README.md's
// commands as printed, outside the checkout; then a broker from that install and an application
// on the SDK.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { freePort, node22 } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReleaseRegistry } from "../../../scripts/release-registry.js";
import { tempDir } from "./cli-harness.js";
import { shellBlockWith } from "./doc-blocks.js";
import { docExample, REPO_ROOT } from "./doc-examples.js";
import { cleanEnv, sh, userPath } from "./user-shell.js";

const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const installBlock = shellBlockWith(
  "README.md",
  readme,
  "ONNXRUNTIME_NODE_INSTALL=skip npm install -g @mq9/cli\nmq9 serve",
);
const sdkBlock = shellBlockWith("README.md", readme, "npm install @mq9/client");
const hello = docExample("README.md", "hello-mjs");

/**
 * What a default install must not bring: the optional parts and their model chains. The ONNX
 * runtime is in it (the default embedder runs on it); its web build is not.
 */
const OPTIONAL = [
  "onnxruntime-web",
  "hnswlib-node",
  "@lancedb",
  "apache-arrow",
  "@huggingface",
  // OTLP export's SDK (the API, a few kilobytes, stays).
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-http",
];

/** Every package folder under a node_modules tree, by name (`@scope/name` for scoped ones). */
function installedNames(dir: string, found = new Set<string>()): Set<string> {
  const modules = join(dir, "node_modules");
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith(".")) continue;
    const scoped = entry.startsWith("@");
    found.add(entry);
    const packages = scoped ? readdirSync(join(modules, entry)).map((name) => `${entry}/${name}`) : [entry];
    for (const name of packages) {
      found.add(name);
      installedNames(join(modules, name), found);
    }
  }
  return found;
}

/** npm's lines that are not its notices about third-party install scripts. */
const warnings = (output: string) =>
  output.split("\n").filter((line) => /^npm (warn|WARN)/.test(line) && !/install-scripts/.test(line));

describe("the packed packages, installed as README.md says", () => {
  const root = tempDir("mq9-packaged-");
  const prefix = join(root, "prefix");
  // The user's own npm config stays (the machine's may say where node-gyp finds Node's headers).
  let scope: NodeJS.ProcessEnv = {};
  let registry: Awaited<ReturnType<typeof startReleaseRegistry>> | undefined;
  let serve: ChildProcess | undefined;
  let server = "";
  let log = "";

  beforeAll(async () => {
    // The tarballs of this checkout's current build (`npm test` built it), into <root>/release,
    // served as by `npm run release:registry` (in this process: npm runs asynchronously) as the
    // @mq9 scope's registry: the user's npm config.
    const release = join(root, "release");
    await sh(process.execPath, ["scripts/pack.js", "--no-build", "--out", release], REPO_ROOT);
    registry = await startReleaseRegistry(release);
    scope = {
      "npm_config_@mq9:registry": registry.url,
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
    };
  }, 600_000);

  afterAll(async () => {
    if (serve && serve.exitCode === null) {
      serve.kill("SIGTERM");
      await new Promise((resolve) => serve?.once("exit", resolve));
    }
    await registry?.close();
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it("npm install -g @mq9/cli gives a mq9 whose serve answers and serves the dashboard", async () => {
    const userEnv = cleanEnv({ ...scope, npm_config_prefix: prefix });
    const install = installBlock.split("\n").find((line) => line.includes("npm install -g"));
    if (!install) throw new Error("README.md's install block has no npm install -g line");
    const installed = await sh("bash", ["-e", "-c", install], root, userEnv);
    const output = installed.stdout + installed.stderr;
    expect(warnings(output), output).toEqual([]);
    expect(output).not.toContain("EBADENGINE");

    const names = installedNames(join(prefix, "lib"));
    expect(names.has("@mq9/cli")).toBe(true);
    expect(OPTIONAL.filter((name) => names.has(name))).toEqual([]);
    expect(names.has("onnxruntime-node")).toBe(true);

    // `mq9 serve` as printed, from the installed bin, on free ports given through its env settings.
    const [port, httpPort] = [await freePort(), await freePort()];
    const serveLine = installBlock.split("\n").find((line) => line.startsWith("mq9 serve"));
    if (!serveLine) throw new Error("README.md's install block has no mq9 serve line");
    const cwd = join(root, "server");
    mkdirSync(cwd);
    serve = spawn("bash", ["-c", `exec ${serveLine}`], {
      cwd,
      env: cleanEnv({
        PATH: `${join(prefix, "bin")}${delimiter}${userPath()}`,
        MQ9_PORT: String(port),
        MQ9_HTTP_PORT: String(httpPort),
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      const seen = (chunk: Buffer) => {
        log += chunk;
        if (/broker ready on/.test(log)) resolve();
      };
      serve?.stdout?.on("data", seen);
      serve?.stderr?.on("data", seen);
      serve?.once("exit", (code) => reject(new Error(`mq9 serve exited with ${code}:\n${log}`)));
    });
    server = `mq9://127.0.0.1:${port}`;
    // The default embedder runs from the install (the model from the user's cache, fetched once).
    expect(log).toMatch(/embedder onnx:.*all-MiniLM-L6-v2-int8/);
    expect(log).not.toMatch(/fallback embedder/);
    // The installed mq9 is the one on PATH: it runs from the prefix, not the checkout.
    const onPath = cleanEnv({ PATH: `${join(prefix, "bin")}${delimiter}${userPath()}` });
    expect((await sh("sh", ["-c", "command -v mq9"], cwd, onPath)).stdout.trim()).toBe(
      join(prefix, "bin", "mq9"),
    );
    const dashboard = await fetch(`http://127.0.0.1:${httpPort}/`);
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toMatch(/<html/i);

    // OTLP export asks for the SDK the install left out, by name and version.
    const refused = await sh(
      "sh",
      [
        "-c",
        "timeout 60 mq9 serve --port 0 --http-port 0 --data ./otlp-data --otlp-endpoint http://127.0.0.1:4318",
      ],
      cwd,
      onPath,
    ).then(
      () => "mq9 serve started",
      (err: Error) => err.message,
    );
    expect(refused).toMatch(
      /OTLP export needs the OpenTelemetry SDK, which a default install leaves out: npm install @opentelemetry\/context-async-hooks@2\.12\.0 /,
    );
  }, 900_000);

  it("an application installs the SDK and sends, fetches and discovers, with types", async () => {
    if (!server) throw new Error("the install test before this one did not start a broker");
    const app = join(root, "app");
    mkdirSync(app);
    writeFileSync(join(app, "hello.mjs"), hello);
    const env = cleanEnv({ ...scope, MQ9_SERVER: server });
    const run = await sh("bash", ["-e", "-o", "pipefail", "-c", sdkBlock], app, env);
    expect(warnings(run.stdout + run.stderr)).toEqual([]);
    expect(run.stdout).toContain("hello from an application");
    expect(run.stdout).toContain("[ 'hello' ]");
    const names = installedNames(app);
    expect(names.has("@mq9/client") && names.has("@mq9/protocol")).toBe(true);
    expect(names.has("@mq9/broker")).toBe(false);

    // Its types: the same program as TypeScript, checked against the installed declarations.
    writeFileSync(join(app, "hello.mts"), hello);
    const tsc = join(REPO_ROOT, "node_modules/typescript/bin/tsc");
    const types = join(REPO_ROOT, "node_modules/@types");
    const checked = await sh(
      process.execPath,
      [
        tsc,
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--target",
        "es2022",
        "--typeRoots",
        types,
        "--types",
        "node",
        "hello.mts",
      ],
      app,
    );
    expect(checked.stdout + checked.stderr).toBe("");

    // @mq9/agent beside it, with nothing else of ours.
    await sh("npm", ["install", "@mq9/agent"], app, env);
    expect(installedNames(app).has("@mq9/broker")).toBe(false);
    const agent = await sh(
      process.execPath,
      ["--input-type=module", "-e", "const m = await import('@mq9/agent'); console.log(typeof m.Agent)"],
      app,
      env,
    );
    expect(agent.stdout.trim()).toBe("function");

    // The same program on Node.js 22 (the test's pinned copy; linux-x64 only).
    const node = node22();
    if (node) {
      const on22 = await sh(node, ["hello.mjs"], app, env);
      expect(on22.stdout).toContain("hello from an application");
    } else if (process.platform === "linux" && process.arch === "x64") {
      throw new Error("the pinned Node.js 22 of packages/testkit/optional-node is not installed");
    }
  }, 600_000);
});
