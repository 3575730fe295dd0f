import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// The app is plain TSX on Preact: the JSX runtime is all the build needs, no plugin.
export default defineConfig({
  root: here("."),
  base: "./",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: here("../dist/app"),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1024,
  },
});
