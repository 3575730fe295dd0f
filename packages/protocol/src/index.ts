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
export { encodeHeaderBlock, Headers, headerMapJson, parseHeaderBlock, splitTags } from "./headers.js";
export { isValidMailAddress, MAIL_ADDRESS_MAX_LENGTH, mailAddressError } from "./mail-address.js";
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
export { codeForErrorText, Mq9Error, type Mq9ErrorCode } from "./mq9-error.js";
export { isPriority, PRIORITIES, type Priority, priorityRank } from "./priority.js";
export { isMq9Subject, MQ9_PREFIX, type Mq9Command, parseMq9Subject, Subjects } from "./subjects.js";
export { TwoGenerationMap } from "./two-generation-map.js";
export {
  type Parsed,
  parseAckRequest,
  parseCreateRequest,
  parseFetchRequest,
  parseQueryRequest,
  parseSendOptions,
  type SendOptions,
} from "./validate.js";
