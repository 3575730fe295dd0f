/**
 * The error texts the broker puts in a reply's `error` field. Texts that the
 * reference broker also produces are kept word for word (callers grep for
 * "does not exist" and "already exists"); the others say what to fix.
 */
export const Errors = {
  emptyName: "prefix must not be empty",
  badNameChars: "name may only contain lowercase letters, digits, and dots",
  badNameEnds: "prefix must start and end with a lowercase letter or digit",
  nameTooLong: "mail_address must be 1-128 characters",
  consecutiveDots: "mail_address must not contain consecutive dots",
  mailboxExists: (address: string) => `mailbox ${address} already exists`,
  mailboxMissing: (address: string) => `mailbox ${address} does not exist`,
  messageNotFound: "message not found",
  /** A NAK of a message the group does not hold leased. */
  messageNotLeased: "message not found: the group holds no lease of it (never delivered, or ACKed)",
  groupMissing: (address: string, group: string) =>
    `group ${group} of mailbox ${address} does not exist; GROUP.LIST.${address} lists its groups`,
  adminOnly: (op: string) => `permission denied: only an admin user may ${op}`,
  invalidMsgId: (token: string) => `invalid msg_id: ${token}`,
  unknownSubject: (subject: string) => `unrecognized mq9 subject: ${subject}`,
  invalidPayload: (command: string, reason: string) => `invalid ${command} payload: ${reason}`,
  invalidQuery: (reason: string) => `invalid query request: ${reason}`,
  invalidHeader: (name: string, value: string, expected: string) =>
    `invalid ${name} header value '${value}': expected ${expected}`,
  agentNotFound: "agent not found",
  agentNameEmpty: "agent name must not be empty",
  emptyRegistration: "payload must not be empty",
  internal: (what: string) => `internal error: ${what}`,
  outcomeUnknown: (reason: string) =>
    `outcome unknown: the message may or may not be stored (${reason}); send it again with the same mq9-idempotency-key header and it is stored once`,
  changeOutcomeUnknown: (reason: string) =>
    `outcome unknown: the change may or may not have been made (${reason}); an ACK, NAK, DELETE or purge repeated changes nothing more, a MAILBOX.CREATE that was made answers MAILBOX_EXISTS`,
  claimOutcomeUnknown: (reason: string) =>
    `outcome unknown: messages may or may not have been leased to this FETCH (${reason}); any it leased are delivered again once their lease ends`,
  notMailboxOwner: (address: string, op: string) =>
    `permission denied: mailbox ${address} belongs to another user; only its owner may ${op} (others may only SEND to it)`,
  notRegistrationOwner: (mailbox: string) =>
    `permission denied: the registration of ${mailbox} belongs to another user; only its owner may change, REPORT or UNREGISTER it`,
  agentNameTaken: (name: string) =>
    `permission denied: the agent name '${name}' is registered by another user; choose another name`,
  registerForeignMailbox: (mailbox: string) =>
    `permission denied: mailbox ${mailbox} belongs to another user; register with a mailbox you created`,
} as const;
