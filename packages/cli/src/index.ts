/**
 * `@mq9/cli` as a library: the `mq9 serve` configuration (file, `MQ9_*` env and flags, in that
 * order, flags winning), validated with clear errors. The command itself is `src/main.ts`.
 *
 * @example
 * ```ts
 * import { loadServeConfig } from "@mq9/cli";
 *
 * const config = loadServeConfig({ env: process.env, flags: { port: "4333" } });
 * console.log(config.server.port, config.storage.data); // 4333 ./mq9-data
 * ```
 */
export { ConfigError, loadServeConfig, type ServeConfig, ServeConfigSchema } from "./serve/config.js";
