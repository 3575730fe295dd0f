export type {
  AgentDiscoverRequest,
  AgentEntry,
  AgentRegistration,
  AgentReportRequest,
  AgentUnregisterRequest,
  DeliverPolicy,
  Mq9ErrorCode,
  Priority,
} from "@mq9/protocol";
export { Mq9Error } from "@mq9/protocol";
export { agentInfoOf } from "./agent-info.js";
export type { RetryOptions } from "./backoff.js";
export { Mq9Client, type Mq9ClientOptions } from "./client.js";
export { type ConnectOptions, connect, DEFAULT_SERVER } from "./connect.js";
export { ConsumedMessage, type ConsumeOptions, Consumer, type MessageHandler } from "./consumer.js";
export { Heartbeat, type HeartbeatOptions } from "./heartbeat.js";
export { type ClientLogger, quietLogger, stderrLogger } from "./logger.js";
export { Mq9Message } from "./message.js";
export { formatMq9Uri, type Mq9Uri, type Mq9UriParts, parseMq9Uri } from "./mq9-uri.js";
export type { Payload } from "./payload.js";
export type { CreateMailboxOptions, FetchOptions, QueryOptions } from "./request-bodies.js";
export type { SendOptions } from "./send-options.js";
export { parseServerUrl, type ServerAddress } from "./server-url.js";
