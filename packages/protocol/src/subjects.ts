/** Every mq9 subject starts with this prefix. */
export const MQ9_PREFIX = "$mq9.AI";

export const Subjects = {
  mailboxCreate: `${MQ9_PREFIX}.MAILBOX.CREATE`,
  send: (mailAddress: string) => `${MQ9_PREFIX}.MSG.SEND.${mailAddress}`,
  fetch: (mailAddress: string) => `${MQ9_PREFIX}.MSG.FETCH.${mailAddress}`,
  ack: (mailAddress: string) => `${MQ9_PREFIX}.MSG.ACK.${mailAddress}`,
  query: (mailAddress: string) => `${MQ9_PREFIX}.MSG.QUERY.${mailAddress}`,
  delete: (mailAddress: string, msgId: number) => `${MQ9_PREFIX}.MSG.DELETE.${mailAddress}.${msgId}`,
  agentRegister: `${MQ9_PREFIX}.AGENT.REGISTER`,
  agentUnregister: `${MQ9_PREFIX}.AGENT.UNREGISTER`,
  agentReport: `${MQ9_PREFIX}.AGENT.REPORT`,
  agentDiscover: `${MQ9_PREFIX}.AGENT.DISCOVER`,
} as const;

export type Mq9Command =
  | { op: "mailbox.create" }
  | { op: "msg.send"; mailAddress: string }
  | { op: "msg.fetch"; mailAddress: string }
  | { op: "msg.ack"; mailAddress: string }
  | { op: "msg.query"; mailAddress: string }
  | { op: "msg.delete"; mailAddress: string; msgIdToken: string }
  | { op: "agent.register" }
  | { op: "agent.unregister" }
  | { op: "agent.report" }
  | { op: "agent.discover" };

const exactCommands: Record<string, Mq9Command> = {
  "MAILBOX.CREATE": { op: "mailbox.create" },
  "AGENT.REGISTER": { op: "agent.register" },
  "AGENT.UNREGISTER": { op: "agent.unregister" },
  "AGENT.REPORT": { op: "agent.report" },
  "AGENT.DISCOVER": { op: "agent.discover" },
};

const addressedCommands = {
  SEND: "msg.send",
  FETCH: "msg.fetch",
  ACK: "msg.ack",
  QUERY: "msg.query",
} as const;

/** True when the subject belongs to mq9 (and so must be answered by the broker, not routed). */
export function isMq9Subject(subject: string): boolean {
  return subject === MQ9_PREFIX || subject.startsWith(`${MQ9_PREFIX}.`);
}

/** Parses a `$mq9.AI.*` subject into a command; `undefined` when it names no command. */
export function parseMq9Subject(subject: string): Mq9Command | undefined {
  if (!subject.startsWith(`${MQ9_PREFIX}.`)) return undefined;
  const rest = subject.slice(MQ9_PREFIX.length + 1);
  const exact = exactCommands[rest];
  if (exact) return exact;
  if (!rest.startsWith("MSG.")) return undefined;
  const tail = rest.slice(4);
  const dot = tail.indexOf(".");
  if (dot <= 0) return undefined;
  const verb = tail.slice(0, dot);
  const target = tail.slice(dot + 1);
  if (target === "") return undefined;
  if (verb === "DELETE") {
    const last = target.lastIndexOf(".");
    if (last <= 0 || last === target.length - 1) return undefined;
    return { op: "msg.delete", mailAddress: target.slice(0, last), msgIdToken: target.slice(last + 1) };
  }
  const op = addressedCommands[verb as keyof typeof addressedCommands];
  return op ? { op, mailAddress: target } : undefined;
}
