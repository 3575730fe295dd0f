import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  chooseHnswBuild,
  type NativeBuildManifest,
  nativeAddonPath,
  nativeManifestPath,
  nativeSkippedPath,
} from "../src/vectors/hnswlib-build.js";
import { clusteredVectors } from "./vector-store-conformance.js";

type Index = {
  initIndex(max: number, m: number, efConstruction: number, seed: number): void;
  addPoint(vector: number[], label: number): void;
  setEf(ef: number): void;
  searchKnn(vector: number[], k: number): { neighbors: number[] };
};
type Module = { HierarchicalNSW: new (space: "ip", dimensions: number) => Index };

const nativeBuilt = existsSync(nativeAddonPath) && existsSync(nativeManifestPath);

describe("the hnswlib build the vector store loads", () => {
  it("npm run build:hnsw-native leaves either a native build or the reason it skipped one", () => {
    if (nativeBuilt) return;
    expect(readFileSync(nativeSkippedPath, "utf8").trim()).not.toBe("");
  });

  it.runIf(nativeBuilt)("the native build is chosen on the CPU that compiled it", () => {
    expect(chooseHnswBuild({})).toEqual({
      specifier: nativeAddonPath,
      description: expect.stringMatching(/^native build \(-O3 -march=native\)$/),
    });
  });

  it.runIf(nativeBuilt)("the native build finds the same neighbours as the generic one", async () => {
    const native = createRequire(import.meta.url)(nativeAddonPath) as Module;
    const generic = (await import("hnswlib-node")) as unknown as Module;
    const vectors = clusteredVectors(3000, 64, 30);
    const build = (module: Module) => {
      const index = new module.HierarchicalNSW("ip", 64);
      index.initIndex(vectors.length, 16, 100, 7);
      for (const [i, v] of vectors.entries()) index.addPoint([...v], i);
      index.setEf(64);
      return index;
    };
    const [a, b] = [build(native), build(generic)];
    for (const probe of [0, 999, 2500]) {
      const query = [...vectors[probe]];
      expect(a.searchKnn(query, 1).neighbors).toEqual([probe]);
      expect(b.searchKnn(query, 1).neighbors).toEqual([probe]);
    }
  });

  it("MQ9_HNSW_NATIVE=0 keeps the generic build", () => {
    expect(chooseHnswBuild({ MQ9_HNSW_NATIVE: "0" })).toEqual({
      specifier: "hnswlib-node",
      description: "generic build (MQ9_HNSW_NATIVE=0)",
    });
  });

  it("a folder without a native build gives the generic one", () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-hnsw-"));
    expect(chooseHnswBuild({}, dir).description).toBe("generic build (no native build)");
  });

  it.runIf(nativeBuilt)(
    "a build for instructions this CPU lacks, or another hnswlib-node, is not loaded",
    () => {
      const manifest = JSON.parse(readFileSync(nativeManifestPath, "utf8")) as NativeBuildManifest;
      const moved = (changed: Partial<NativeBuildManifest>) => {
        const dir = mkdtempSync(join(tmpdir(), "mq9-hnsw-"));
        copyFileSync(nativeAddonPath, join(dir, "addon.node"));
        writeFileSync(join(dir, "build.json"), JSON.stringify({ ...manifest, ...changed }));
        return chooseHnswBuild({}, dir);
      };
      expect(moved({ cpuFlags: [...manifest.cpuFlags, "avx10_9"] })).toEqual({
        specifier: "hnswlib-node",
        description: "generic build (native build not usable: this CPU lacks avx10_9)",
      });
      expect(moved({ hnswlibVersion: "0.0.1" }).description).toBe(
        "generic build (native build not usable: built from hnswlib-node 0.0.1)",
      );
      expect(moved({ arch: "riscv64" }).description).toBe(
        `generic build (native build not usable: built for ${process.platform}-riscv64)`,
      );
    },
  );

  it("an unreadable manifest gives the generic build, not a crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-hnsw-"));
    writeFileSync(join(dir, "addon.node"), "not an addon");
    writeFileSync(join(dir, "build.json"), "{ half");
    expect(chooseHnswBuild({}, dir).description).toBe("generic build (unreadable native build manifest)");
  });
});
