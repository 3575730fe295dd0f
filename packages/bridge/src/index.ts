export { type Bridge, type BridgeOptions, startBridge } from "./bridge.js";
export { readCardFile } from "./card-file.js";
export {
  CommandExecutor,
  type CommandExecutorOptions,
  INPUT_REQUIRED_PREFIX,
  type TaskInput,
} from "./command-executor.js";
