import { connect as tcpConnect } from "node:net";

/** INFO lines are small; a first line longer than this is not one. */
const MAX_INFO_BYTES = 64 * 1024;

/** Why the broker's INFO could not be read; `code` follows the client's error codes. */
export class ServerInfoError extends Error {
  constructor(
    message: string,
    readonly code: "NOT_CONNECTED" | "TIMEOUT",
  ) {
    super(message);
  }
}

/**
 * Reads the INFO line a NATS server sends first on a new connection, and hangs up. No credentials
 * are needed: a server sends INFO before it asks for them (and before a TLS upgrade).
 */
export function readServerInfo(
  host: string,
  port: number,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      outcome();
    };
    const fail = (message: string, code: ServerInfoError["code"] = "NOT_CONNECTED") =>
      finish(() => reject(new ServerInfoError(message, code)));
    const timer = setTimeout(
      () =>
        fail(
          `${where} sent no NATS INFO within ${timeoutMs} ms: it is not an mq9 broker's port (an HTTP port?)`,
          "TIMEOUT",
        ),
      timeoutMs,
    );
    socket.on("error", (err: NodeJS.ErrnoException) => {
      const reason =
        err.code === "ECONNREFUSED" ? "connection refused; is the broker running there?" : err.message;
      fail(`cannot connect to ${where}: ${reason}`);
    });
    socket.on("close", () => fail(`${where} closed the connection before it sent NATS INFO`));
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf("\r\n");
      if (end < 0 && received.length < MAX_INFO_BYTES) return;
      const line = received.subarray(0, end < 0 ? 80 : end).toString("utf8");
      if (!line.startsWith("INFO ")) {
        fail(
          `${where} is not an mq9 broker: it answered '${line.slice(0, 60)}' where NATS INFO was expected`,
        );
        return;
      }
      try {
        const info = JSON.parse(line.slice(5)) as unknown;
        if (typeof info !== "object" || info === null) throw new Error("not an object");
        finish(() => resolve(info as Record<string, unknown>));
      } catch {
        fail(`${where} sent an INFO line that is not a JSON object`);
      }
    });
  });
}
