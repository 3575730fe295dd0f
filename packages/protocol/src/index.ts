/**
 * `@mq9/protocol` — the whole mq9 wire, defined once: subjects, headers, request and reply
 * shapes, the request validators the broker runs, the reply encoders it writes with, the reply
 * decoders the client reads with, error texts and their stable codes. No dependencies; the
 * broker and the client both build on it, so they cannot drift apart.
 *
 * @example
 * ```ts
 * import { decodeSendReply, encodeSendReply, parseCreateRequest, Subjects } from "@mq9/protocol";
 *
 * Subjects.send("agents.planner"); // "$mq9.AI.MSG.SEND.agents.planner"
 * const create = parseCreateRequest(new TextEncoder().encode('{"name":"agents.planner","ttl":60}'));
 * if (!create.ok) throw new Error(create.error); // the text a broker answers with
 * const reply = decodeSendReply(new TextEncoder().encode(encodeSendReply(7)), "send");
 * if (reply.ok) console.log(reply.value); // 7; else reply.error is an Mq9Error with its code
 * ```
 */
export type {
  AgentDiscoverReply,
  AgentDiscoverRequest,
  AgentEntry,
  AgentRegistration,
  AgentReportRequest,
  AgentUnregisterRequest,
  McpServerRegistration,
} from "./agent-messages.js";
export {
  bareMailbox,
  DEFAULT_REGISTRATION_LIMITS,
  mcpServerKey,
  normalizeTag,
  type ParsedRegistration,
  parseRegisterRequest,
  RESOURCE_KINDS,
  type RegistrationLimits,
  type ResourceKind,
  type SkillText,
} from "./agent-registration.js";
export {
  type AgentSelector,
  MAX_DISCOVER_LIMIT,
  type ParsedDiscoverRequest,
  type ParsedReportRequest,
  parseDiscoverRequest,
  parseReportRequest,
  parseUnregisterRequest,
} from "./agent-requests.js";
export { closestName, didYouMean, suggestion } from "./closest-name.js";
export { Defaults } from "./defaults.js";
export { Errors } from "./errors.js";
export { headerBlockJson } from "./header-block-json.js";
export { encodeHeaderBlock, Headers, headerMapJson, parseHeaderBlock, splitTags } from "./headers.js";
export type {
  GroupInfoReply,
  GroupInfoRequest,
  GroupListReply,
  GroupReleaseReply,
  GroupReleaseRequest,
  GroupResetRequest,
  GroupSummary,
  LeaseSummary,
  MailboxInfoReply,
  MailboxListReply,
  MailboxListRequest,
  MailboxPurgeReply,
  MailboxPurgeRequest,
  MailboxSummary,
  ServerInfoReply,
} from "./inspection-messages.js";
export {
  DEFAULT_MAILBOX_LIST_LIMIT,
  MAX_MAILBOX_LIST_LIMIT,
  parseGroupInfoRequest,
  parseGroupReleaseRequest,
  parseGroupResetRequest,
  parseMailboxListRequest,
  parseMailboxPurgeRequest,
} from "./inspection-requests.js";
export { type Logger, silentLogger } from "./logger.js";
export { isValidMailAddress, MAIL_ADDRESS_MAX_LENGTH, mailAddressError } from "./mail-address.js";
export { encodeMessageItem, type ItemHeaderParts, type WireMessage } from "./message-item.js";
export type {
  AckRequest,
  DeleteReply,
  DeliverPolicy,
  FetchConfig,
  FetchRequest,
  HeaderFormat,
  MailboxCreateReply,
  MailboxCreateRequest,
  MessageItem,
  MessagesReply,
  Mq9Reply,
  NakRequest,
  PayloadFormat,
  QueryRequest,
  RetryReply,
  RetryRequest,
  SendReply,
} from "./messages.js";
export { DELIVER_POLICIES, HEADER_FORMATS, PAYLOAD_FORMATS } from "./messages.js";
export {
  codeForErrorText,
  isMq9ErrorCode,
  MQ9_ERROR_CODES,
  Mq9Error,
  type Mq9ErrorCode,
} from "./mq9-error.js";
export { isPriority, PRIORITIES, type Priority, priorityRank } from "./priority.js";
export {
  type DecodedReply,
  decodeCreateReply,
  decodeDeleteReply,
  decodeDiscoverReply,
  decodeMessagesReply,
  decodeReply,
  decodeSendReply,
  malformedReply,
} from "./reply-decoding.js";
export {
  type ErrorReply,
  encodeReply,
  encodeSendReply,
  errorReplyOf,
  internalErrorReply,
  type ReplyBody,
  type ReplyPayload,
} from "./reply-encoding.js";
export {
  isMq9Subject,
  type MailboxAdminOp,
  MQ9_PREFIX,
  type Mq9Command,
  parseMq9Subject,
  Subjects,
} from "./subjects.js";
export { formatTraceparent, isTraceId, parseTraceparent, type TraceParent } from "./trace-context.js";
export { TwoGenerationMap } from "./two-generation-map.js";
export {
  MAX_BACKOFF_STEPS,
  MAX_DELIVER_LIMIT,
  MAX_MEMBER_LENGTH,
  MAX_NAK_REASON_LENGTH,
  MAX_REDELIVERY_DELAY_MS,
  type Parsed,
  type ParsedSendOptions,
  parseAckRequest,
  parseCreateRequest,
  parseFetchRequest,
  parseMsgIdToken,
  parseNakRequest,
  parseQueryRequest,
  parseRetryRequest,
  parseSendOptions,
  requestValue,
} from "./validate.js";
