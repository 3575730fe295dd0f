#!/usr/bin/env node
// The `mq9` command of a checkout (`npx mq9`, or on PATH after `npm link`): runs the built CLI,
// and builds the packages first when they are not built yet (a clone installed with
// `npm ci --ignore-scripts`, say).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cli = new URL("../packages/cli/dist/main.js", import.meta.url);
if (!existsSync(cli)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  if (!existsSync(new URL("../node_modules/typescript", import.meta.url))) {
    process.stderr.write(`mq9: this checkout (${root}) is not installed yet: run npm ci there first\n`);
    process.exit(2);
  }
  process.stderr.write("mq9: building the packages first (once per checkout)…\n");
  const built = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: ["ignore", 2, 2] });
  if (built.status !== 0) {
    process.stderr.write(`mq9: the build failed; run npm run build in ${root} to see why\n`);
    process.exit(2);
  }
}
await import(cli.href);
