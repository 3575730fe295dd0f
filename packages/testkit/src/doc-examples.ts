// Running a page's `<!-- docs-example: NAME -->` block as a reader would: a module of its own,
// beside the packages it imports, against the test's broker.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./sample-agents.js";

/** The fenced block after `<!-- docs-example: NAME -->` in a page (path from the repository root). */
export function docsExample(page: string, name: string): string {
  const doc = readFileSync(join(repoRoot, page), "utf8");
  const marker = doc.indexOf(`<!-- docs-example: ${name} -->`);
  if (marker < 0) throw new Error(`${page} has no example named ${name}`);
  const start = doc.indexOf("\n", doc.indexOf("```", marker)) + 1;
  return doc.slice(start, doc.indexOf("```", start));
}

/**
 * Runs the example as an ES module under `packages/<pkg>/node_modules/.cache`, so that its
 * imports resolve as in a project that installed that package; resolves with its stdout.
 */
export async function runDocsExample(
  page: string,
  name: string,
  pkg: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const dir = join(repoRoot, "packages", pkg, "node_modules/.cache/mq9-docs");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, docsExample(page, name));
  const { stdout } = await promisify(execFile)(process.execPath, [file], {
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return stdout;
}
