/**
 * Where the client's background work (consume loops, heartbeats, A2A agents) reports failures
 * that have no caller to throw to. `console` fits, and so does a pino logger.
 */
export interface ClientLogger {
  warn(message: string): void;
}

/** The default: one line on stderr per failure, as the client always did. */
export const stderrLogger: ClientLogger = {
  warn: (message) => {
    process.stderr.write(`${message}\n`);
  },
};

/** Says nothing: for programs that watch failures through `onError` or not at all. */
export const quietLogger: ClientLogger = { warn: () => {} };
