import { readFileSync } from "node:fs";

/** The CLI's version, read from its package.json (one directory above dist/ and src/). */
export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version?: string;
  };
  return manifest.version ?? "unknown";
}
