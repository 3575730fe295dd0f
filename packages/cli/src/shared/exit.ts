/**
 * Ends a one-shot command with `code` once what it printed has been written. The command exits
 * instead of waiting for the event loop to empty because a failed connection attempt may leave a
 * socket open: nats.js keeps the socket to a server that never sends INFO (an HTTP port, say), and
 * the command must not hang on it after it has reported the error.
 */
export async function exitAfterOutput(code: number): Promise<never> {
  await Promise.all(
    [process.stdout, process.stderr].map(
      (stream) => new Promise<void>((resolve) => stream.write("", () => resolve())),
    ),
  );
  process.exit(code);
}
