import { join } from "node:path";
import { repoRoot } from "./sample-agents.js";

/** The built `mq9` command (`packages/cli/dist/main.js`), which tests run as a user runs `mq9`. */
export const MQ9_CLI = join(repoRoot, "packages/cli/dist/main.js");

/** `serve` on free ports (the broker's and the HTTP one) with JSON logs, which say the ports. */
export const SERVE_ON_FREE_PORTS = ["serve", "--port", "0", "--http-port", "0", "--log-format", "json"];
