import { execFileSync } from "node:child_process";
import { ensureOptionalNodePackages } from "./packages/testkit/src/optional-node.js";

/**
 * Once before every test file: what a default install leaves out but the suite exercises. The
 * optional npm packages (LanceDB, the ONNX runtime), the static embedder's table (distilled,
 * not part of the build) and the CPU-specific hnswlib build. Each step is a no-op when done.
 */
export async function setup(): Promise<void> {
  await ensureOptionalNodePackages();
  for (const script of ["build-static-table.mjs", "build-hnsw-native.mjs"]) {
    execFileSync(process.execPath, [`packages/registry/scripts/${script}`], { stdio: "inherit" });
  }
}
