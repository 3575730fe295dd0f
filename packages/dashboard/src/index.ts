/**
 * The mq9 web dashboard: a single-page app built into `dist/app`, which `mq9 serve` serves at `/`.
 *
 * ```ts
 * import { dashboardAssets } from "@mq9/dashboard";
 * const dir = dashboardAssets(); // undefined until `npm run build` made it
 * ```
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The folder of the built app (index.html, assets/), or undefined when it was not built. */
export function dashboardAssets(): string | undefined {
  // dist/index.js → dist/app; the sources (src/index.ts under vitest) look there too.
  const dir = fileURLToPath(new URL("../dist/app/", import.meta.url));
  return existsSync(`${dir}index.html`) ? dir : undefined;
}

/** Paths of the app itself (its page and scripts, which hold no data): served without credentials. */
export function isDashboardAsset(path: string): boolean {
  // Nothing that a path normalisation could turn into another route.
  if (path.includes("..") || path.includes("%")) return false;
  return path === "/" || path === "/index.html" || path === "/favicon.svg" || path.startsWith("/assets/");
}
