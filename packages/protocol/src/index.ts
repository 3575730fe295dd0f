export type {
  AgentDiscoverReply,
  AgentDiscoverRequest,
  AgentEntry,
  AgentRegistration,
  AgentReportRequest,
  AgentUnregisterRequest,
} from "./agent-messages.js";
export {
  bareMailbox,
  DEFAULT_REGISTRATION_LIMITS,
  normalizeTag,
  type ParsedRegistration,
  parseRegisterRequest,
  type RegistrationLimits,
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
export { Defaults } from "./defaults.js";
export { Errors } from "./errors.js";
export { headerBlockJson } from "./header-block-json.js";
export { encodeHeaderBlock, Headers, headerMapJson, parseHeaderBlock, splitTags } from "./headers.js";
export { isValidMailAddress, MAIL_ADDRESS_MAX_LENGTH, mailAddressError } from "./mail-address.js";
export { encodeMessageItem, type ItemHeaderParts, type WireMessage } from "./message-item.js";
export type {
  AckRequest,
  DeleteReply,
  DeliverPolicy,
  FetchConfig,
  FetchRequest,
  MailboxCreateReply,
  MailboxCreateRequest,
  MessageItem,
  MessagesReply,
  Mq9Reply,
  QueryRequest,
  SendReply,
} from "./messages.js";
export { DELIVER_POLICIES } from "./messages.js";
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
export { isMq9Subject, MQ9_PREFIX, type Mq9Command, parseMq9Subject, Subjects } from "./subjects.js";
export { TwoGenerationMap } from "./two-generation-map.js";
export {
  type Parsed,
  type ParsedSendOptions,
  parseAckRequest,
  parseCreateRequest,
  parseFetchRequest,
  parseQueryRequest,
  parseSendOptions,
} from "./validate.js";
