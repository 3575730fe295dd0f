// Which compiled hnswlib the vector store loads. npm builds hnswlib-node for a generic x86-64
// (SSE only); `npm run build:hnsw-native` also compiles it for the installing machine's own CPU into
// dist/hnswlib-native/. That build runs only on a CPU with every instruction-set flag of the
// machine that compiled it, so a data folder or image moved to an older CPU falls back to the
// generic build instead of dying on an illegal instruction.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface NativeBuildManifest {
  hnswlibVersion: string;
  platform: string;
  arch: string;
  cpuFlags: string[];
  compilerFlags: string;
}

// From src/vectors (tests) and dist/vectors alike: the build lives in the package's dist.
export const nativeBuildDir = fileURLToPath(new URL("../../dist/hnswlib-native/", import.meta.url));
export const nativeAddonPath = join(nativeBuildDir, "addon.node");
export const nativeManifestPath = join(nativeBuildDir, "build.json");
/** Written instead of the addon when the native build was skipped: the reason, one line. */
export const nativeSkippedPath = join(nativeBuildDir, "skipped.txt");

/** `MQ9_HNSW_NATIVE=0` keeps the generic build, at build time and at run time. */
export function nativeBuildWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.MQ9_HNSW_NATIVE !== "0";
}

/** The CPU's instruction-set flags (Linux's /proc/cpuinfo), or undefined where they cannot be read. */
export function cpuFlags(): Set<string> | undefined {
  if (process.platform !== "linux") return undefined;
  let info: string;
  try {
    info = readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return undefined;
  }
  const line = info.split("\n").find((l) => /^(flags|Features)\s*:/.test(l));
  if (!line) return undefined;
  return new Set(
    line
      .slice(line.indexOf(":") + 1)
      .trim()
      .split(/\s+/),
  );
}

export function installedHnswlibVersion(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    return (require("hnswlib-node/package.json") as { version: string }).version;
  } catch {
    return undefined;
  }
}

/** Why the native build cannot be used here, or undefined when it can. */
export function nativeBuildMismatch(manifest: NativeBuildManifest): string | undefined {
  if (manifest.platform !== process.platform || manifest.arch !== process.arch)
    return `built for ${manifest.platform}-${manifest.arch}`;
  if (manifest.hnswlibVersion !== installedHnswlibVersion())
    return `built from hnswlib-node ${manifest.hnswlibVersion}`;
  const flags = cpuFlags();
  if (!flags) return "this CPU's flags cannot be read";
  const missing = manifest.cpuFlags.filter((f) => !flags.has(f));
  if (missing.length > 0) return `this CPU lacks ${missing.slice(0, 4).join(", ")}`;
  return undefined;
}

export interface ChosenHnswBuild {
  /** The module to load: the native addon's path, or the package name. */
  specifier: string;
  /** One line for the log: which build, and why not the native one. */
  description: string;
}

export function chooseHnswBuild(env: NodeJS.ProcessEnv = process.env, dir = nativeBuildDir): ChosenHnswBuild {
  const generic = (why: string) => ({ specifier: "hnswlib-node", description: `generic build (${why})` });
  if (!nativeBuildWanted(env)) return generic("MQ9_HNSW_NATIVE=0");
  const addon = join(dir, "addon.node");
  const manifestPath = join(dir, "build.json");
  if (!existsSync(addon) || !existsSync(manifestPath)) return generic("no native build");
  let manifest: NativeBuildManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as NativeBuildManifest;
  } catch {
    return generic("unreadable native build manifest");
  }
  const mismatch = nativeBuildMismatch(manifest);
  if (mismatch) return generic(`native build not usable: ${mismatch}`);
  return { specifier: addon, description: `native build (${manifest.compilerFlags})` };
}
