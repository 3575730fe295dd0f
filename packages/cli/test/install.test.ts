import { appendFileSync, existsSync, readFileSync, rmSync } from "node:fs";
import { delimiter, join } from "node:path";
import { ensurePythonEnv, skipWithoutPython, startBroker, type TestBroker, VENV } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { shellBlockWith } from "./doc-blocks.js";
import { REPO_ROOT } from "./doc-examples.js";
import { cleanEnv, sh, userPath } from "./user-shell.js";

/** The first fenced block in `lang` after the heading `heading` of a Markdown page, as printed. */
function blockAfter(page: string, heading: string, lang: string): string {
  const from = page.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`no heading '${heading}'`);
  const block = new RegExp("```" + lang + "\\n([\\s\\S]*?)```").exec(page.slice(from));
  if (!block) throw new Error(`no ${lang} block after '${heading}'`);
  return block[1];
}

const version = JSON.parse(readFileSync(join(REPO_ROOT, "packages/cli/package.json"), "utf8")).version;

// A fresh clone of what is committed (uncommitted changes of a working tree are not in it).
describe("install from a fresh clone, as the README says", () => {
  let broker: TestBroker;
  beforeAll(async () => {
    broker = await startBroker({ registry: false });
  });
  afterAll(() => broker.close());

  // The clone with its node_modules is over a gigabyte: it goes when the test ends.
  let dir: string | undefined;
  // What the first test installed, for the Hermes steps after it.
  let installed: { clone: string; prefix: string } | undefined;
  // (Deleting a gigabyte takes a while on a loaded machine: a generous hook timeout.)
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 300_000);

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
      ["mailbox", "create", "fresh.clone.inbox", "--server", broker.url],
      outside,
      onPath,
    );
    expect(created.stdout).toBe("fresh.clone.inbox\n");
    installed = { clone, prefix };
  }, 1_200_000);

  // docs/hermes.md's steps as printed, with `mq9` on PATH from the npm link above (not a
  // launcher of the test's own): the plugin's install line, the MCP route's config block, and
  // Hermes' own check of that MCP server.
  it.skipIf(skipWithoutPython())(
    "the Hermes steps of docs/hermes.md: plugin install, the mcp_servers block, `hermes mcp test mq9`",
    async () => {
      if (!installed) throw new Error("the install test before this one did not finish");
      const { clone, prefix } = installed;
      await ensurePythonEnv();
      const home = tempDir("mq9-hermes-home-");
      const page = readFileSync(join(clone, "docs/hermes.md"), "utf8");
      const hermesEnv = cleanEnv({
        PATH: [join(prefix, "bin"), join(VENV, "bin"), userPath()].join(delimiter),
        HERMES_HOME: home,
        MQ9_SERVER: broker.url,
      });
      // The linked mq9 is the one Hermes finds.
      const which = await sh("sh", ["-c", "command -v mq9"], home, hermesEnv);
      expect(which.stdout.trim()).toBe(join(prefix, "bin", "mq9"));

      // "Install": run at the clone's root, as the page says.
      await sh(
        "sh",
        ["-c", shellBlockWith("docs/hermes.md", page, "hermes plugins install")],
        clone,
        hermesEnv,
      );
      expect(existsSync(join(home, "plugins/mq9/plugin.yaml"))).toBe(true);

      // "The MCP route": the block goes into Hermes' config as printed.
      const mcpServers = blockAfter(page, "## The MCP route", "yaml");
      expect(mcpServers).toMatch(/command: "mq9"/);
      appendFileSync(join(home, "config.yaml"), `\n${mcpServers}`);
      const check = await sh(
        "sh",
        ["-c", shellBlockWith("docs/hermes.md", page, "hermes mcp test")],
        home,
        hermesEnv,
      );
      const output = check.stdout + check.stderr;
      expect(output, output).toContain("Transport: stdio → mq9");
      expect(output, output).toMatch(/Connected \(\d+ms\)/);
      expect(output, output).toMatch(/Tools discovered: [1-9]/);
      expect(output).toContain("mq9_discover_agents");
      expect(output).toContain("mq9_call_agent");
      rmSync(home, { recursive: true, force: true });
    },
    900_000,
  );
});
