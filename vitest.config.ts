import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const packagesDir = fileURLToPath(new URL("./packages/", import.meta.url));

/** The CLI's tests run it as users do; every other package resolves to its sources. */
const builtOnly = new Set(["@mq9/cli"]);

/**
 * One exact alias per entry of each package's `exports` map, from `./dist/x.js` to `./src/x.ts`,
 * so a new subpath export resolves to its source without an edit here.
 */
function sourceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const dir of readdirSync(packagesDir)) {
    const manifest = JSON.parse(readFileSync(`${packagesDir}${dir}/package.json`, "utf8"));
    if (builtOnly.has(manifest.name)) continue;
    for (const [subpath, target] of Object.entries<{ default: string }>(manifest.exports ?? {})) {
      const specifier = subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
      const source = target.default.replace(/^\.\/dist\//, "./src/").replace(/\.js$/, ".ts");
      aliases.push({
        find: new RegExp(`^${specifier.replace(/[/.]/g, "\\$&")}$`),
        replacement: `${packagesDir}${dir}/${source.slice(2)}`,
      });
    }
  }
  return aliases;
}

export default defineConfig({
  resolve: {
    // Tests run against the sources of sibling packages, not their last build.
    alias: sourceAliases(),
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "integrations/*/test/**/*.test.ts"],
    globalSetup: ["./vitest.global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
