/**
 * `@mq9/bridge` — a command-line agent served as an A2A agent on an mq9 mailbox: one process
 * per task, stdout streamed back as artifact chunks (what `mq9 agent serve` runs).
 *
 * @example
 * ```ts
 * import { readCardFile, startBridge } from "@mq9/bridge";
 * import { connect } from "@mq9/client";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * const bridge = await startBridge(client, { card: readCardFile("echo.yaml"), command: "tr a-z A-Z" });
 * await bridge.stop(); // unregisters and lets running tasks finish
 * ```
 */
export { type Bridge, type BridgeOptions, startBridge } from "./bridge.js";
export { readCardFile } from "./card-file.js";
export {
  CommandExecutor,
  type CommandExecutorOptions,
  INPUT_REQUIRED_PREFIX,
  type TaskInput,
} from "./command-executor.js";
