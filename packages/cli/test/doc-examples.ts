import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The repository root, where README.md and docs/ are. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The fenced block after `<!-- docs-example: NAME -->` in a page of docs/ (path from the repository root). */
export function docExample(page: string, name: string): string {
  const doc = readFileSync(`${REPO_ROOT}${page}`, "utf8");
  const marker = doc.indexOf(`<!-- docs-example: ${name} -->`);
  if (marker < 0) throw new Error(`${page} has no example named ${name}`);
  const start = doc.indexOf("\n", doc.indexOf("```", marker)) + 1;
  return doc.slice(start, doc.indexOf("```", start));
}

/** Splits a shell line into words, honouring single and double quotes (enough for the docs). */
export function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}
