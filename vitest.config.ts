import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the sources of sibling packages, not their last build.
    alias: {
      "@mq9/protocol": src("protocol"),
      "@mq9/broker": src("broker"),
      "@mq9/client": src("client"),
      "@mq9/orchestrator": src("orchestrator"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
