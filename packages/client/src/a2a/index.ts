export { A2AAgent, type A2AAgentOptions, type A2AAgentStopOptions, mailboxFromName } from "./a2a-agent.js";
export {
  type A2AAgentRef,
  A2AClient,
  type A2AClientOptions,
  type A2ADiscoverQuery,
  type A2ASendOptions,
  type A2ASendResult,
  type AgentTarget,
} from "./a2a-client.js";
export { A2AError, type A2AErrorCode } from "./a2a-error.js";
export { type AgentCardJson, cardOfEntry, normalizeCard, withMailboxInterface } from "./agent-card.js";
export { A2AHeaders, MQ9_A2A_BINDING } from "./binding.js";
export { MailboxTaskStore } from "./mailbox-task-store.js";
export {
  Mq9Transport,
  Mq9TransportFactory,
  type Mq9TransportOptions,
  mailboxOf,
  timeoutKey,
} from "./mq9-transport.js";
export type { Reply, ReplyInboxOptions } from "./reply-inbox.js";
export { ReplyInbox } from "./reply-inbox.js";
export { type RpcCallOptions, RpcChannel } from "./rpc-channel.js";
export { TaskEvents, type TaskStateName } from "./task-events.js";
export {
  type EventInfo,
  endsStream,
  endsV03Stream,
  eventInfo,
  isTerminalState,
  type JsonObject,
  type JsonRpcRequest,
  type JsonRpcResponse,
  partsText,
  RpcErrorCode,
  type TaskJson,
  textMessage,
  v1State,
} from "./wire.js";
