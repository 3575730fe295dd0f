/**
 * `@mq9/agent/internal` — what sibling packages (the orchestrator, the CLI, the benchmark)
 * need beyond the public entry: the orchestrator's mailbox and key names, the loop guards,
 * and the record an orchestrated agent's registration carries. Not for agent authors; it
 * may change with any release.
 *
 * @example
 * ```ts
 * import { ORCHESTRATED_TAG, SeenMessages } from "@mq9/agent/internal";
 *
 * const seen = new SeenMessages();
 * if (!seen.firstTime(message.msg_id)) return; // a duplicate
 * ```
 *
 * @module
 */

export { PRIORITY_HELP } from "./bus/envelope.js";
export { preciseNow } from "./bus/envelope-io.js";
export { loopViolation, SeenMessages, TraceBudget } from "./bus/loop-guard.js";
export {
  cancelKey,
  controlMailbox,
  mailboxSafe,
  memoryKey,
  queryKey,
  replyKey,
  taskKey,
} from "./bus/names.js";
export * from "./index.js";
export { type ManifestRecord, ORCHESTRATED_TAG } from "./manifest/manifest.js";
