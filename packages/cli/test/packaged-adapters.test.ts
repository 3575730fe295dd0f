// The framework adapters as a user installs them: the packed @mq9 packages (served as the
// scope's registry), the framework from the npm registry, with each docs page's install line as
// printed, outside the checkout; then the page's quick start against a real broker.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docsExample, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReleaseRegistry } from "../../../scripts/release-registry.js";
import { tempDir } from "./cli-harness.js";
import { shellBlockWith } from "./doc-blocks.js";
import { REPO_ROOT } from "./doc-examples.js";
import { cleanEnv, sh } from "./user-shell.js";

const FRAMEWORKS = ["@langchain/core", "@langchain/langgraph", "ai", "@openai/agents-core"];

const ADAPTERS = [
  {
    name: "@mq9/langchain",
    page: "docs/langchain.md",
    example: "langchain-quickstart",
    own: ["@langchain/core"],
  },
  { name: "@mq9/ai-sdk", page: "docs/ai-sdk.md", example: "ai-sdk-quickstart", own: ["ai"] },
  {
    name: "@mq9/openai-agents",
    page: "docs/openai-agents.md",
    example: "openai-agents-quickstart",
    own: ["@openai/agents-core"],
  },
];

/** The top-level packages of a project's node_modules, by name. */
function installed(app: string): Set<string> {
  const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  return new Set(
    Object.keys(lock.packages)
      .filter((path) => path.startsWith("node_modules/"))
      .map((path) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)),
  );
}

describe("the packed framework adapters, installed as their docs say", () => {
  const root = tempDir("mq9-adapters-");
  let registry: Awaited<ReturnType<typeof startReleaseRegistry>> | undefined;
  let scope: NodeJS.ProcessEnv = {};
  let t: TestBroker;

  beforeAll(async () => {
    const release = join(root, "release");
    await sh(process.execPath, ["scripts/pack.js", "--no-build", "--out", release], REPO_ROOT);
    registry = await startReleaseRegistry(release);
    scope = {
      "npm_config_@mq9:registry": registry.url,
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
    };
    t = await startBroker({ registry: { embedder: "none" } });
  }, 600_000);

  afterAll(async () => {
    await t?.close();
    await registry?.close();
    rmSync(root, { recursive: true, force: true });
  });

  for (const adapter of ADAPTERS) {
    it(`${adapter.name}: the install line brings its framework alone; the quick start runs`, async () => {
      const page = readFileSync(join(REPO_ROOT, adapter.page), "utf8");
      const install = shellBlockWith(adapter.page, page, `npm install ${adapter.name}`);
      const app = join(root, adapter.name.replace("@mq9/", "app-"));
      mkdirSync(app);
      writeFileSync(
        join(app, "package.json"),
        JSON.stringify({ name: "app", private: true, type: "module" }),
      );
      const run = await sh("bash", ["-e", "-c", install], app, cleanEnv(scope));
      expect(run.stdout + run.stderr).not.toContain("EBADENGINE");

      const names = installed(app);
      expect(names.has(adapter.name)).toBe(true);
      expect(names.has("@mq9/broker")).toBe(false);
      const others = FRAMEWORKS.filter((name) => !adapter.own.includes(name) && names.has(name));
      // The LangChain page installs LangGraph for its quick start; nothing else brings a framework.
      expect(others.filter((name) => name !== "@langchain/langgraph")).toEqual([]);

      writeFileSync(join(app, "quickstart.mjs"), docsExample(adapter.page, adapter.example));
      const { stdout } = await sh(process.execPath, ["quickstart.mjs"], app, cleanEnv({ MQ9_SERVER: t.url }));
      expect(stdout.trim()).toBe("completed Bonjour");
    }, 600_000);
  }
});
