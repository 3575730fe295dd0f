/**
 * `@mq9/client` — the mq9 SDK for TypeScript: persistent mailboxes, messages with priorities,
 * keys, TTLs and delays, consumer groups, and the agent registry, over one NATS connection. It
 * speaks only the public protocol (`@mq9/protocol`), so it works against any mq9 broker. A2A
 * over mailboxes is in `@mq9/client/a2a`.
 *
 * @example
 * ```ts
 * import { connect } from "@mq9/client";
 *
 * const client = await connect("mq9://127.0.0.1:4332");
 * await client.ensureMailbox({ name: "agents.planner", ttlSeconds: 3600 });
 * await client.send("agents.planner", { task: "plan the release" }, { priority: "urgent" });
 * const worker = client.consume("agents.planner", (message) => console.log(message.json()), {
 *   group: "planners",
 *   deliver: "earliest",
 * });
 * // … later: stops the consumer (its running handlers finish) and the connection.
 * await client.close();
 * ```
 */
export type {
  AgentDiscoverRequest,
  AgentEntry,
  AgentRegistration,
  AgentReportRequest,
  AgentUnregisterRequest,
  DeliverPolicy,
  GroupSummary,
  LeaseSummary,
  MailboxInfoReply,
  MailboxSummary,
  McpServerRegistration,
  Mq9ErrorCode,
  Priority,
  ServerInfoReply,
} from "@mq9/protocol";
export { Mq9Error } from "@mq9/protocol";
export { agentInfoOf } from "./agent-info.js";
export type { RetryOptions } from "./backoff.js";
export { Mq9Client, type Mq9ClientOptions } from "./client.js";
export { type ConnectOptions, connect, DEFAULT_SERVER } from "./connect.js";
export {
  ConsumedMessage,
  type ConsumeOptions,
  Consumer,
  DEFAULT_RETRY_DELAYS_MS,
  type MessageHandler,
} from "./consumer.js";
export { Heartbeat, type HeartbeatOptions } from "./heartbeat.js";
export type { GroupResetPosition, MailboxListOptions, PurgeFilter } from "./inspection-bodies.js";
export { type ClientLogger, quietLogger, stderrLogger } from "./logger.js";
export { Mq9Message } from "./message.js";
export { formatMq9Uri, type Mq9Uri, type Mq9UriParts, parseMq9Uri } from "./mq9-uri.js";
export type { Payload } from "./payload.js";
export type { CreateMailboxOptions, FetchOptions, NakOptions, QueryOptions } from "./request-bodies.js";
export type { SendOptions, SendRetryOptions } from "./send-options.js";
export { parseServerUrl, type ServerAddress } from "./server-url.js";
export {
  currentTracer,
  MESSAGING_SYSTEM,
  MessagingAttributes,
  messageSpanContext,
  traceHeaders,
} from "./tracing.js";
