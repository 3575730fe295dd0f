import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a process that cannot be told to
 * listen on port 0 and report its port (another process may still take it: use it at once).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
