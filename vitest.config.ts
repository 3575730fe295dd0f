import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the sources of sibling packages, not their last build.
    alias: {
      "@mq9/protocol": src("protocol"),
      "@mq9/broker/internal": fileURLToPath(new URL("./packages/broker/src/internal.ts", import.meta.url)),
      "@mq9/broker/api": fileURLToPath(new URL("./packages/broker/src/api.ts", import.meta.url)),
      "@mq9/broker/ard-manifest": fileURLToPath(
        new URL("./packages/broker/src/http/ard/ard-manifest.ts", import.meta.url),
      ),
      "@mq9/broker/register-all": fileURLToPath(
        new URL("./packages/broker/src/http/ard/register-all.ts", import.meta.url),
      ),
      "@mq9/broker": src("broker"),
      "@mq9/registry/defaults": fileURLToPath(
        new URL("./packages/registry/src/defaults.ts", import.meta.url),
      ),
      "@mq9/registry/models": fileURLToPath(
        new URL("./packages/registry/src/models/index.ts", import.meta.url),
      ),
      "@mq9/registry": src("registry"),
      "@mq9/client/a2a": fileURLToPath(new URL("./packages/client/src/a2a/index.ts", import.meta.url)),
      "@mq9/client": src("client"),
      "@mq9/agent/internal": fileURLToPath(new URL("./packages/agent/src/internal.ts", import.meta.url)),
      "@mq9/agent/a2a": fileURLToPath(new URL("./packages/agent/src/a2a/index.ts", import.meta.url)),
      "@mq9/agent": src("agent"),
      "@mq9/tools": src("tools"),
      "@mq9/mcp": src("mcp"),
      "@mq9/langchain": src("langchain"),
      "@mq9/ai-sdk": src("ai-sdk"),
      "@mq9/openai-agents": src("openai-agents"),
      "@mq9/bridge": src("bridge"),
      "@mq9/gateway": src("gateway"),
      "@mq9/orchestrator/defaults": fileURLToPath(
        new URL("./packages/orchestrator/src/defaults.ts", import.meta.url),
      ),
      "@mq9/orchestrator/api": fileURLToPath(new URL("./packages/orchestrator/src/api.ts", import.meta.url)),
      "@mq9/orchestrator": src("orchestrator"),
      "@mq9/dashboard": src("dashboard"),
      "@mq9/testkit": src("testkit"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "integrations/*/test/**/*.test.ts"],
    globalSetup: ["./vitest.global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
