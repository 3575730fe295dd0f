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

/** Encodes one `-ERR` line. */
export function errLine(text: ProtocolErrorText): Buffer {
  return Buffer.from(`-ERR '${text}'\r\n`);
}
