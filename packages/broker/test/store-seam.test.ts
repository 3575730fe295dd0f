import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const storeDir = join(root, "packages/broker/src/store");

/** Every .ts file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The classes under store/ that implement the Store seam. */
function storeClasses(): string[] {
  const names = sources(storeDir).flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/class (\w+) implements [^{]*\bStore\b/g)].map((m) => m[1]),
  );
  return [...new Set(names)];
}

describe("the Store seam", () => {
  it("no package's source outside store/ asks which store it has (instanceof, or probing for a method)", () => {
    const classes = storeClasses();
    expect(classes).toEqual(expect.arrayContaining(["SqliteStore", "PostgresStore"]));
    const asksClass = new RegExp(`instanceof (${classes.join("|")})\\b`);
    // A duck-typed probe of a store: `typeof (store as …).x === "function"` or `"x" in store`.
    const probes = /typeof \(\w*[sS]tore as [^)]*\)\.\w+ === "function"|"\w+" in (this\.)?\w*[sS]tore\b/;
    const packages = join(root, "packages");
    const offenders: string[] = [];
    for (const pkg of readdirSync(packages)) {
      let files: string[];
      try {
        files = sources(join(packages, pkg, "src"));
      } catch {
        continue;
      }
      for (const file of files) {
        if (file.startsWith(`${storeDir}/`)) continue;
        readFileSync(file, "utf8")
          .split("\n")
          .forEach((line, i) => {
            if (asksClass.test(line) || probes.test(line))
              offenders.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
          });
      }
    }
    // Give the Store interface (packages/broker/src/store/store.ts) what the caller needs instead.
    expect(offenders).toEqual([]);
  });
});
