import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import {
  commandShims,
  describeFailure,
  documentedPages,
  readPage,
  runBlock,
  type ShellBlock,
  shellBlocks,
} from "./doc-blocks.js";
import { REPO_ROOT } from "./doc-examples.js";

/** How long one block may run; a block that starts something long-running puts it in the background. */
const BLOCK_TIMEOUT_MS = 90_000;

/**
 * The environment of a block: the test broker in MQ9_SERVER, a config folder of the page's own
 * (`mq9 context add` writes there), no other MQ9_* setting of the caller's.
 */
function blockEnv(shims: string, server: string, configHome: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("MQ9_")) env[name] = value;
  }
  // NODE_PATH: `node -e "require('…')"` finds the checkout's packages, as it does for a reader in it.
  return {
    ...env,
    PATH: `${shims}:${process.env.PATH ?? ""}`,
    NODE_PATH: join(REPO_ROOT, "node_modules"),
    MQ9_SERVER: server,
    MQ9_CONFIG_HOME: configHome,
  };
}

const pages = documentedPages().map((page) => ({ page, blocks: shellBlocks(page, readPage(page)) }));

describe("shell blocks of the docs run as printed, against a real broker", () => {
  it("finds the pages and their blocks", () => {
    expect(pages.map((p) => p.page)).toContain("README.md");
    expect(pages.flatMap((p) => p.blocks).length).toBeGreaterThan(10);
  });

  for (const { page, blocks } of pages) {
    if (blocks.length === 0) continue;
    const runnable = blocks.filter((b) => b.skip === undefined);
    describe(page, () => {
      let broker: ServeProcess | undefined;
      let cwd: string;
      let env: NodeJS.ProcessEnv;
      beforeAll(async () => {
        if (runnable.length === 0) return;
        // One broker and one working folder per page: its blocks run in order, as a reader types them.
        const dir = tempDir("mq9-doc-");
        cwd = join(dir, "work");
        broker = await spawnServe(["--data", join(dir, "data")]);
        env = blockEnv(commandShims(join(dir, "bin")), `mq9://127.0.0.1:${broker.port}`, join(dir, "config"));
        mkdirSync(cwd);
      }, 120_000);
      afterAll(async () => {
        broker?.child.kill("SIGTERM");
        await broker?.exited;
      });

      for (const block of blocks) {
        const name = `${block.file}:${block.line}`;
        if (block.skip !== undefined) {
          it.skip(`${name} (${block.skip})`, () => {});
          continue;
        }
        it(
          name,
          async () => {
            const run = await runBlock(block as ShellBlock, cwd, env, BLOCK_TIMEOUT_MS);
            if (run.code !== 0) expect.fail(describeFailure(block, run, BLOCK_TIMEOUT_MS));
          },
          BLOCK_TIMEOUT_MS + 10_000,
        );
      }
    });
  }
});
