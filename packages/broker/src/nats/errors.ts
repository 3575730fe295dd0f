/**
 * The error texts the listener sends as `-ERR '<text>'`. They match nats-server's wording because
 * client libraries (nats.js among them) recognise some of them by text, e.g. the authorization
 * violation or the stale-connection error.
 */
export const ProtocolError = {
  AuthorizationViolation: "Authorization Violation",
  AuthenticationTimeout: "Authentication Timeout",
  MaxControlLine: "Maximum Control Line Exceeded",
  MaxPayload: "Maximum Payload Violation",
  UnknownOperation: "Unknown Protocol Operation",
  InvalidSubject: "Invalid Subject",
  InvalidPublishSubject: "Invalid Publish Subject",
  StaleConnection: "Stale Connection",
  SlowConsumer: "Slow Consumer",
  MaxConnections: "maximum connections exceeded",
} as const;

export type ProtocolErrorText = (typeof ProtocolError)[keyof typeof ProtocolError];

/** nats-server's text for a refused PUB. */
export function publishViolation(subject: string): string {
  return `Permissions Violation for Publish to "${subject}"`;
}

/** nats-server's text for a refused SUB. */
export function subscribeViolation(subject: string, queue: string | undefined): string {
  const using = queue === undefined ? "" : ` using queue "${queue}"`;
  return `Permissions Violation for Subscription to "${subject}"${using}`;
}

/** Encodes one `-ERR` line. */
export function errLine(text: ProtocolErrorText | string): Buffer {
  return Buffer.from(`-ERR '${text}'\r\n`);
}
