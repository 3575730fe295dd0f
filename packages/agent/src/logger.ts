import type { Logger } from "@mq9/protocol";

export { type Logger, silentLogger } from "@mq9/protocol";

/**
 * What is used when no logger is given: warnings and errors as one line each on stderr,
 * `<name>: <message>` and the fields as JSON; debug and info are dropped. The one place the
 * Agent SDK and the orchestrator write to stderr.
 */
export function namedStderrLogger(name: string): Logger {
  const line = (obj: object | string, msg?: string) => {
    const text = typeof obj === "string" ? obj : (msg ?? "");
    const fields = typeof obj === "string" || Object.keys(obj).length === 0 ? "" : ` ${JSON.stringify(obj)}`;
    process.stderr.write(`${name}: ${text}${fields}\n`);
  };
  return { debug() {}, info() {}, warn: line, error: line };
}
