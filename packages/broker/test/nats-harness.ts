// Test harness for the embedded NATS listener: a listener on a random port, real `nats` clients,
// and a raw-socket client for speaking (or mangling) the protocol by hand.

import { createConnection, type Socket } from "node:net";
import { type ConnectionOptions, connect, type NatsConnection } from "nats";
import { type Logger, NatsListener, type NatsListenerOptions } from "../src/nats/index.js";

export interface LogEntry {
  level: "debug" | "info" | "warn" | "error";
  obj: object | string;
  msg?: string;
}

/** A pino-compatible logger that keeps every entry, so tests can assert on what was logged. */
export function captureLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at =
    (level: LogEntry["level"]) =>
    (obj: object | string, msg?: string): void => {
      entries.push({ level, obj, msg });
    };
  return { entries, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export interface Started {
  listener: NatsListener;
  port: number;
  /** Every nats connection opened through `nats()`, closed by `stop()`. */
  nats(opts?: ConnectionOptions): Promise<NatsConnection>;
  raw(): Promise<RawClient>;
  stop(): Promise<void>;
}

/** Starts a listener on 127.0.0.1 and a free port. */
export async function startListener(options: NatsListenerOptions = {}): Promise<Started> {
  const listener = new NatsListener({ host: "127.0.0.1", port: 0, ...options });
  const { port } = await listener.listen();
  const conns: NatsConnection[] = [];
  const raws: RawClient[] = [];
  return {
    listener,
    port,
    async nats(opts: ConnectionOptions = {}) {
      const nc = await connect({ servers: `127.0.0.1:${port}`, reconnect: false, ...opts });
      conns.push(nc);
      return nc;
    },
    async raw() {
      const client = await RawClient.connect(port);
      raws.push(client);
      return client;
    },
    async stop() {
      for (const raw of raws) raw.destroy();
      await Promise.all(conns.map((nc) => (nc.isClosed() ? undefined : nc.close().catch(() => {}))));
      await listener.close({ drainTimeoutMs: 500 });
    },
  };
}

/** A plain TCP client that records everything the server sends. */
export class RawClient {
  private received = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  closed = false;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.wake();
    });
    socket.on("error", () => {});
    this.closedPromise = new Promise((resolve) => {
      socket.on("close", () => {
        this.closed = true;
        this.wake();
        resolve();
      });
    });
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: "127.0.0.1", port }, () => resolve(new RawClient(socket)));
      socket.once("error", reject);
    });
  }

  /** Everything received so far, as latin1 text (byte-exact). */
  get text(): string {
    return this.received.toString("latin1");
  }

  send(data: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(data);
  }

  /** Resolves once the received text matches; rejects with what was received on timeout. */
  async waitFor(pattern: RegExp | string, timeoutMs = 3000): Promise<string> {
    const test = (): boolean =>
      typeof pattern === "string" ? this.text.includes(pattern) : pattern.test(this.text);
    await this.until(
      test,
      timeoutMs,
      () => `waiting for ${String(pattern)}; received ${JSON.stringify(this.text)}`,
    );
    return this.text;
  }

  /** Resolves once the server closed the connection. */
  async waitClosed(timeoutMs = 3000): Promise<void> {
    await this.until(
      () => this.closed,
      timeoutMs,
      () => `connection still open; received ${JSON.stringify(this.text)}`,
    );
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private async until(test: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!test()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`RawClient timed out ${describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** Polls a condition until it holds. */
export async function waitUntil(test: () => boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
