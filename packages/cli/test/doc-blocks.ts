import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./doc-examples.js";

/** One ```sh / ```bash / ```shell block of a Markdown page. */
export interface ShellBlock {
  /** The page, from the repository root (docs/cli.md). */
  file: string;
  /** The line of the opening fence, from 1. */
  line: number;
  /** The commands, with the fence's indentation taken off. */
  script: string;
  /** The reason of its `<!-- doc-test: skip (reason) -->` marker, when it has one. */
  skip?: string;
}

const FENCE = /^( *)(`{3,}|~{3,})\s*([\w+-]*)/;
const SHELLS = new Set(["sh", "bash", "shell"]);
const SKIP = /^<!--\s*doc-test:\s*skip\s*\((.+)\)\s*-->$/;

/**
 * The pages whose shell blocks are run: README.md, CONTRIBUTING.md, docs/*.md, each package's
 * README.md and bench/RESULTS.md.
 */
export function documentedPages(root = REPO_ROOT): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  const packages = readdirSync(join(root, "packages"))
    .sort()
    .map((name) => `packages/${name}/README.md`);
  return ["README.md", "CONTRIBUTING.md", ...docs, ...packages, "bench/RESULTS.md"].filter((page) =>
    existsSync(join(root, page)),
  );
}

/**
 * The shell blocks of a page. A skip marker stands on the line before the fence (blank lines and
 * other HTML comments may come between); a `doc-test` comment in any other form is an error, so
 * that a typo does not quietly run or skip a block.
 */
export function shellBlocks(file: string, text: string): ShellBlock[] {
  const lines = text.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    if (SHELLS.has(lang.toLowerCase())) {
      const body = lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()));
      blocks.push({ file, line: i + 1, script: `${body.join("\n")}\n`, skip: skipReason(file, lines, i) });
    }
    i = end;
  }
  return blocks;
}

/** The shell block of a page that holds `command`, as printed. */
export function shellBlockWith(file: string, page: string, command: string): string {
  const block = shellBlocks(file, page).find((b) => b.script.includes(command));
  if (!block) throw new Error(`${file} has no shell block with '${command}'`);
  return block.script;
}

function skipReason(file: string, lines: string[], fence: number): string | undefined {
  for (let j = fence - 1; j >= 0; j--) {
    const line = lines[j].trim();
    if (line === "") continue;
    if (!line.startsWith("<!--")) return undefined;
    if (!/doc-test/.test(line)) continue;
    const skip = SKIP.exec(line);
    if (!skip || skip[1].trim() === "") {
      throw new Error(
        `${file}:${j + 1}: malformed doc-test marker ${line}; write <!-- doc-test: skip (the reason) -->`,
      );
    }
    return skip[1].trim();
  }
  return undefined;
}

/** What running a block did. */
export interface BlockRun {
  code: number | string;
  output: string;
  timedOut: boolean;
}

/**
 * Runs a block as a bash script (`-e -o pipefail`: the first failing command fails the block) in
 * `cwd` with `env`. A command the block starts in the background (`cmd &`) runs while the rest of
 * the block does and is ended with the block, as is anything still running after `timeoutMs`.
 */
export function runBlock(
  block: ShellBlock,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<BlockRun> {
  return new Promise((resolve) => {
    // Its own process group, so that the block's background jobs end with it.
    const child = spawn("bash", ["-e", "-o", "pipefail", "-c", block.script], {
      cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c) => {
      output += c;
    });
    child.stderr.on("data", (c) => {
      output += c;
    });
    let timedOut = false;
    const endGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // The group is gone already.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      endGroup("SIGKILL");
    }, timeoutMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      endGroup("SIGTERM");
      // Output may still sit in the pipes at exit: wait for them to close, briefly, since a
      // straggler of the block's may hold them open until its SIGTERM lands.
      const finish = () => resolve({ code: code ?? signal ?? -1, output, timedOut });
      const grace = setTimeout(finish, 2_000);
      child.once("close", () => {
        clearTimeout(grace);
        finish();
      });
    });
  });
}

/** The failure text of a block: where it is, what it ran, what it printed. */
export function describeFailure(block: ShellBlock, run: BlockRun, timeoutMs: number): string {
  const why = run.timedOut ? `did not finish within ${timeoutMs} ms` : `failed with exit code ${run.code}`;
  return `${block.file}:${block.line}: the shell block ${why}\n--- block\n${block.script}--- output\n${run.output}`;
}

/**
 * A folder to put first on PATH: `mq9` runs this checkout's CLI (as after `npm link`), and
 * `npx mq9` does the same from any folder (as it does inside the checkout); other `npx` calls go
 * to the real npx.
 */
export function commandShims(dir: string, root = REPO_ROOT, realPath = process.env.PATH ?? ""): string {
  mkdirSync(dir, { recursive: true });
  const launcher = join(root, "bin/mq9.js");
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o755);
  };
  write("mq9", `#!/bin/sh\nexec "${process.execPath}" "${launcher}" "$@"\n`);
  write(
    "npx",
    `#!/bin/sh\nif [ "$1" = mq9 ]; then shift; exec "${process.execPath}" "${launcher}" "$@"; fi\nPATH="${realPath}" exec npx "$@"\n`,
  );
  return dir;
}

/** The page's text. */
export function readPage(page: string, root = REPO_ROOT): string {
  return readFileSync(join(root, page), "utf8");
}
