/**
 * `@mq9/agent` — the Agent SDK: what an agent author depends on, and nothing of the
 * orchestrator's scheduler, templates or webhooks.
 *
 * An agent is a class with a manifest (name, capabilities, concurrency) and one method,
 * `handleMessage`. `start()` registers it in the broker's registry, heartbeats its load
 * and takes work from its own mailbox; the orchestrator (or any sender that speaks the
 * envelope) routes work to it by capability.
 *
 * @example
 * ```ts
 * import { Agent, type Envelope } from "@mq9/agent";
 *
 * class Summarizer extends Agent {
 *   constructor() {
 *     super({ name: "summarizer", capabilities: ["summarize"], max_concurrency: 4 });
 *   }
 *   handleMessage(message: Envelope) {
 *     if (message.msg_type !== "query") return undefined;
 *     return { summary: String((message.payload as { text?: string }).text ?? "").slice(0, 200) };
 *   }
 * }
 *
 * await new Summarizer().start("mq9://localhost:4332");
 * ```
 *
 * @module
 */
export { Agent, type AgentOptions, type AgentStopOptions, type MessageContext } from "./agent/agent.js";
export { type DeadLetter, DeadLetters } from "./bus/dead-letters.js";
export {
  type ChildFields,
  childOf,
  createEnvelope,
  decodeEnvelope,
  type Envelope,
  EnvelopeError,
  EnvelopeHeaders,
  envelopeHeaders,
  forward,
  isTaskPriority,
  MESSAGE_TYPES,
  type MessageType,
  mq9Priority,
  type NewEnvelope,
  newId,
  replyTo,
  type TaskPriority,
} from "./bus/envelope.js";
export { readEnvelope, type SendEnvelopeOptions, sendEnvelope } from "./bus/envelope-io.js";
export { agentMailbox, BusNames, DEFAULT_NAMESPACE, traceTag } from "./bus/names.js";
export { type Logger, namedStderrLogger, silentLogger } from "./logger.js";
export {
  type AgentManifest,
  ManifestError,
  type ResolvedManifest,
  registrationBody,
  resolveManifest,
} from "./manifest/manifest.js";
export { DEFAULT_MEMORY_TTL_S, TraceMemory } from "./memory/trace-memory.js";
