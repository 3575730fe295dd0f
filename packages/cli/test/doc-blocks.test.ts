import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "./cli-harness.js";
import { commandShims, describeFailure, runBlock, shellBlocks } from "./doc-blocks.js";

const page = [
  "# A page",
  "",
  "```sh",
  "echo one",
  "```",
  "",
  "<!-- doc-test: skip (needs the reader's own cluster) -->",
  "```bash",
  "echo two",
  "```",
  "",
  "```text",
  "not run",
  "```",
  "",
  "1. In a list:",
  "",
  "   ```shell",
  "   echo three",
  "   false",
  "   echo never",
  "   ```",
].join("\n");

describe("the doc runner", () => {
  it("finds sh, bash and shell blocks with their lines, skip reasons and indentation taken off", () => {
    expect(shellBlocks("docs/page.md", page)).toEqual([
      { file: "docs/page.md", line: 3, script: "echo one\n", skip: undefined },
      { file: "docs/page.md", line: 8, script: "echo two\n", skip: "needs the reader's own cluster" },
      { file: "docs/page.md", line: 18, script: "echo three\nfalse\necho never\n", skip: undefined },
    ]);
  });

  it("rejects a doc-test marker without a reason, naming its file and line", () => {
    expect(() => shellBlocks("README.md", "<!-- doc-test: skip -->\n```sh\nls\n```\n")).toThrow(
      /^README\.md:1: malformed doc-test marker/,
    );
  });

  it("a failing command fails its block, and the failure names the file and line of the block", async () => {
    const [, , failing] = shellBlocks("docs/page.md", page);
    const run = await runBlock(failing, tempDir(), process.env, 20_000);
    expect(run.code).toBe(1);
    expect(run.output).toBe("three\n");
    expect(describeFailure(failing, run, 20_000)).toMatch(
      /^docs\/page\.md:18: the shell block failed with exit code 1\n--- block\necho three\n/,
    );
  });

  it("background commands end with their block; a block that runs too long is stopped", async () => {
    const dir = tempDir();
    const [background] = shellBlocks("p.md", "```sh\nsleep 600 &\necho $! > pid\n```\n");
    const run = await runBlock(background, dir, process.env, 20_000);
    expect(run.code).toBe(0);
    const pid = Number(readFileSync(join(dir, "pid"), "utf8"));
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    const [slow] = shellBlocks("p.md", "```sh\nsleep 600\n```\n");
    const stopped = await runBlock(slow, dir, process.env, 500);
    expect(stopped.timedOut).toBe(true);
    expect(describeFailure(slow, stopped, 500)).toMatch(
      /^p\.md:1: the shell block did not finish within 500 ms/,
    );
  });

  it("blocks find mq9 and npx mq9 on PATH", async () => {
    const shims = commandShims(join(tempDir(), "bin"));
    const [block] = shellBlocks("p.md", "```sh\nmq9 --version\nnpx mq9 --version\n```\n");
    const run = await runBlock(
      block,
      tempDir(),
      { ...process.env, PATH: `${shims}:${process.env.PATH}` },
      60_000,
    );
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/^\d+\.\d+\.\d+\n\d+\.\d+\.\d+\n$/);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
