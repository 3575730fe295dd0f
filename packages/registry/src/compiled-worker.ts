import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The URL of a worker entry (`file`, a .js path relative to this package's
 * src/ or dist/). Tests run from the TypeScript sources, where no .js exists
 * next to the module, so they start the build's copy (`npm test` builds first).
 */
export function compiledWorkerUrl(file: string): URL | undefined {
  const here = new URL(`./${file}`, import.meta.url);
  if (existsSync(fileURLToPath(here))) return here;
  const built = new URL(`../dist/${file}`, import.meta.url);
  if (import.meta.url.includes("/src/") && existsSync(fileURLToPath(built))) return built;
  return undefined;
}
