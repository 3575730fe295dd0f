/** Every mq9 subject starts with this prefix. */
export const MQ9_PREFIX = "$mq9.AI";

export const Subjects = {
  mailboxCreate: `${MQ9_PREFIX}.MAILBOX.CREATE`,
  send: (mailAddress: string) => `${MQ9_PREFIX}.MSG.SEND.${mailAddress}`,
  fetch: (mailAddress: string) => `${MQ9_PREFIX}.MSG.FETCH.${mailAddress}`,
  ack: (mailAddress: string) => `${MQ9_PREFIX}.MSG.ACK.${mailAddress}`,
  query: (mailAddress: string) => `${MQ9_PREFIX}.MSG.QUERY.${mailAddress}`,
  /** mq9 extension: give a leased message back (see NakRequest). */
  nak: (mailAddress: string) => `${MQ9_PREFIX}.MSG.NAK.${mailAddress}`,
  /** mq9 extension: move dead letters back to their mailbox (see RetryRequest). */
  retry: (deadLetterAddress: string) => `${MQ9_PREFIX}.MSG.RETRY.${deadLetterAddress}`,
  delete: (mailAddress: string, msgId: number) => `${MQ9_PREFIX}.MSG.DELETE.${mailAddress}.${msgId}`,
  agentRegister: `${MQ9_PREFIX}.AGENT.REGISTER`,
  agentUnregister: `${MQ9_PREFIX}.AGENT.UNREGISTER`,
  agentReport: `${MQ9_PREFIX}.AGENT.REPORT`,
  agentDiscover: `${MQ9_PREFIX}.AGENT.DISCOVER`,
  // mq9 extensions for operators (docs/protocol.md, "mq9 extensions").
  mailboxList: `${MQ9_PREFIX}.MAILBOX.LIST`,
  mailboxInfo: (mailAddress: string) => `${MQ9_PREFIX}.MAILBOX.INFO.${mailAddress}`,
  mailboxPurge: (mailAddress: string) => `${MQ9_PREFIX}.MAILBOX.PURGE.${mailAddress}`,
  mailboxRemove: (mailAddress: string) => `${MQ9_PREFIX}.MAILBOX.REMOVE.${mailAddress}`,
  groupList: (mailAddress: string) => `${MQ9_PREFIX}.GROUP.LIST.${mailAddress}`,
  groupInfo: (mailAddress: string) => `${MQ9_PREFIX}.GROUP.INFO.${mailAddress}`,
  groupReset: (mailAddress: string) => `${MQ9_PREFIX}.GROUP.RESET.${mailAddress}`,
  groupRelease: (mailAddress: string) => `${MQ9_PREFIX}.GROUP.RELEASE.${mailAddress}`,
  serverInfo: `${MQ9_PREFIX}.SERVER.INFO`,
} as const;

/** The operators' requests that name a mailbox in their last tokens. */
export type MailboxAdminOp =
  | "mailbox.info"
  | "mailbox.purge"
  | "mailbox.remove"
  | "group.list"
  | "group.info"
  | "group.reset"
  | "group.release";

export type Mq9Command =
  | { op: "mailbox.create" }
  | { op: "msg.send"; mailAddress: string }
  | { op: "msg.fetch"; mailAddress: string }
  | { op: "msg.ack"; mailAddress: string }
  | { op: "msg.query"; mailAddress: string }
  | { op: "msg.nak"; mailAddress: string }
  | { op: "msg.retry"; mailAddress: string }
  | { op: "msg.delete"; mailAddress: string; msgIdToken: string }
  | { op: "agent.register" }
  | { op: "agent.unregister" }
  | { op: "agent.report" }
  | { op: "agent.discover" }
  | { op: "mailbox.list" }
  | { op: MailboxAdminOp; mailAddress: string }
  | { op: "server.info" };

const exactCommands = new Map<string, Mq9Command>([
  ["MAILBOX.CREATE", { op: "mailbox.create" }],
  ["AGENT.REGISTER", { op: "agent.register" }],
  ["AGENT.UNREGISTER", { op: "agent.unregister" }],
  ["AGENT.REPORT", { op: "agent.report" }],
  ["AGENT.DISCOVER", { op: "agent.discover" }],
  ["MAILBOX.LIST", { op: "mailbox.list" }],
  ["SERVER.INFO", { op: "server.info" }],
]);

/** `<VERB>.` after the prefix, and the op of a subject that continues with a mail address. */
const mailboxAdminCommands: [string, MailboxAdminOp][] = [
  ["MAILBOX.INFO.", "mailbox.info"],
  ["MAILBOX.PURGE.", "mailbox.purge"],
  ["MAILBOX.REMOVE.", "mailbox.remove"],
  ["GROUP.LIST.", "group.list"],
  ["GROUP.INFO.", "group.info"],
  ["GROUP.RESET.", "group.reset"],
  ["GROUP.RELEASE.", "group.release"],
];

const PREFIX_DOT = `${MQ9_PREFIX}.`;

/** True when the subject belongs to mq9 (and so must be answered by the broker, not routed). */
export function isMq9Subject(subject: string): boolean {
  return subject === MQ9_PREFIX || subject.startsWith(PREFIX_DOT);
}

/** Where the verb of a `$mq9.AI.MSG.<verb>.<target>` subject starts. */
const MSG_VERB_AT = PREFIX_DOT.length + "MSG.".length;

/**
 * Parses a `$mq9.AI.*` subject into a command; `undefined` when it names no command. Every
 * SEND passes through here, so the verb is compared in place, without slicing it out.
 */
export function parseMq9Subject(subject: string): Mq9Command | undefined {
  if (!subject.startsWith(PREFIX_DOT)) return undefined;
  if (!subject.startsWith("MSG.", PREFIX_DOT.length)) {
    const rest = subject.slice(PREFIX_DOT.length);
    const exact = exactCommands.get(rest);
    if (exact !== undefined) return exact;
    for (const [verb, op] of mailboxAdminCommands) {
      if (rest.length > verb.length && rest.startsWith(verb))
        return { op, mailAddress: rest.slice(verb.length) };
    }
    return undefined;
  }
  const dot = subject.indexOf(".", MSG_VERB_AT);
  if (dot <= MSG_VERB_AT || dot === subject.length - 1) return undefined;
  const target = subject.slice(dot + 1);
  const verb = (name: string) => dot - MSG_VERB_AT === name.length && subject.startsWith(name, MSG_VERB_AT);
  if (verb("SEND")) return { op: "msg.send", mailAddress: target };
  if (verb("FETCH")) return { op: "msg.fetch", mailAddress: target };
  if (verb("ACK")) return { op: "msg.ack", mailAddress: target };
  if (verb("QUERY")) return { op: "msg.query", mailAddress: target };
  if (verb("NAK")) return { op: "msg.nak", mailAddress: target };
  if (verb("RETRY")) return { op: "msg.retry", mailAddress: target };
  if (!verb("DELETE")) return undefined;
  const last = target.lastIndexOf(".");
  if (last <= 0 || last === target.length - 1) return undefined;
  return { op: "msg.delete", mailAddress: target.slice(0, last), msgIdToken: target.slice(last + 1) };
}
