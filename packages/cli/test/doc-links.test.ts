import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./doc-examples.js";

/** The Markdown files of the repository (tracked or new, not ignored). */
function markdownFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.md"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  });
  return listed
    .split("\n")
    .filter((file) => file !== "" && existsSync(join(REPO_ROOT, file)))
    .sort();
}

/** The text outside fenced blocks and inline code, where links are links. */
function prose(text: string): string {
  return text.replace(/^ *(```|~~~)[\s\S]*?^ *\1.*$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchors of a page's headings. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading
      .replace(/`/g, "")
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

function headingAnchors(text: string): Set<string> {
  // Headings inside code are no headings, but their text was removed with the code.
  return anchors(text.replace(/`([^`\n]*)`/g, "$1"));
}

/** Every problem with the links of one page: a path outside the repository, a missing file or anchor. */
function linkProblems(page: string): string[] {
  const text = readFileSync(join(REPO_ROOT, page), "utf8");
  const problems: string[] = [];
  const targets = [
    ...[...prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
    ...[...prose(text).matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]),
  ];
  for (const target of targets) {
    if (/^https?:\/\//.test(target)) {
      if (/^https?:\/\/(localhost|127\.|\[::1\]|0\.0\.0\.0)/.test(target)) {
        problems.push(`${page}: ${target} is not a public URL`);
      }
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      if (!target.startsWith("mailto:"))
        problems.push(`${page}: ${target}: only public http(s) URLs may leave the repository`);
      continue;
    }
    const [path, anchor] = target.split("#", 2);
    const file =
      path === "" ? join(REPO_ROOT, page) : resolve(REPO_ROOT, dirname(page), decodeURIComponent(path));
    const inside = relative(REPO_ROOT, file);
    if (inside.startsWith("..") || resolve(file) === resolve("/")) {
      problems.push(`${page}: ${target} points outside the repository`);
      continue;
    }
    if (!existsSync(file)) {
      problems.push(`${page}: ${target}: no such file ${inside}`);
      continue;
    }
    if (anchor !== undefined && file.endsWith(".md")) {
      if (!headingAnchors(readFileSync(file, "utf8")).has(anchor)) {
        problems.push(`${page}: ${target}: ${inside} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}

describe("links in the docs", () => {
  it("stay inside the repository or go to public URLs, and every file and heading they name exists", () => {
    const pages = markdownFiles();
    expect(pages).toContain("README.md");
    expect(pages.flatMap(linkProblems)).toEqual([]);
  });

  it("the checker catches a broken link", () => {
    expect(headingAnchors("## Command-line agents: `mq9 agent serve`\n## A.B, C\n## A.B, C")).toEqual(
      new Set(["command-line-agents-mq9-agent-serve", "ab-c", "ab-c-1"]),
    );
  });
});
