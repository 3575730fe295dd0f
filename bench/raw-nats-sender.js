// A SEND client made of one socket and the NATS text protocol, no SDK: what a SEND@1 round trip
// costs with the client's share near nothing, so that the broker's share of the SDK's p50 shows.
import net from "node:net";

/** Connects to the broker on `port`; `send(payload)` publishes one SEND to `mailbox` and resolves on its reply. */
export async function rawNatsSender(port, mailbox) {
  const socket = net.connect(port, "127.0.0.1");
  socket.setNoDelay(true);
  await new Promise((resolve, reject) => {
    socket.once("data", resolve); // INFO
    socket.once("error", reject);
  });
  socket.write(
    'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\nSUB _INBOX.rawsend.* 1\r\nPING\r\n',
  );
  await new Promise((resolve) => socket.once("data", resolve)); // PONG
  let pending;
  let seen = "";
  socket.on("data", (chunk) => {
    seen += chunk.toString("latin1");
    for (;;) {
      const line = seen.indexOf("\r\n");
      if (line < 0) return;
      const text = seen.slice(0, line);
      if (!text.startsWith("MSG ")) {
        // PING, +OK or -ERR: a PING gets its PONG, an -ERR fails the SEND in flight.
        seen = seen.slice(line + 2);
        if (text === "PING") socket.write("PONG\r\n");
        if (text.startsWith("-ERR")) pending?.reject(new Error(`broker: ${text}`));
        continue;
      }
      const size = Number(text.split(" ").at(-1));
      if (seen.length < line + 2 + size + 2) return;
      const body = seen.slice(line + 2, line + 2 + size);
      seen = seen.slice(line + 2 + size + 2);
      const resolve = pending?.resolve;
      pending = undefined;
      resolve?.(body);
    }
  });
  return {
    /** Resolves with the reply's JSON text. */
    send(payload) {
      const head = Buffer.from(`PUB $mq9.AI.MSG.SEND.${mailbox} _INBOX.rawsend.1 ${payload.length}\r\n`);
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        socket.write(Buffer.concat([head, payload, CRLF]));
      });
    },
    close() {
      socket.destroy();
    },
  };
}

const CRLF = Buffer.from("\r\n");
