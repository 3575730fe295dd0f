import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker, type BrokerOptions } from "@mq9/broker";
import { type ConnectOptions, connect, type Mq9Client } from "@mq9/client";
import { registryFactory } from "@mq9/registry";

export interface TestBroker {
  broker: Broker;
  port: number;
  /** `mq9://127.0.0.1:<port>` */
  url: string;
  dataDir: string;
  /** A client connected to this broker; closed by `close()`. */
  client(options?: ConnectOptions, url?: string): Promise<Mq9Client>;
  /** Stops the broker; clients see a lost connection. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(options?: BrokerOptions): Promise<void>;
  close(): Promise<void>;
}

/** Starts a real broker on a free port with a fresh data directory. */
export async function startBroker(options: BrokerOptions = {}): Promise<TestBroker> {
  const dataDir = mkdtempSync(join(tmpdir(), "mq9-test-"));
  const base = { dataDir, sweepIntervalMs: 100, registry: registryFactory(), ...options };
  let broker = await Broker.start({ port: 0, ...base });
  const port = broker.port;
  const clients: Mq9Client[] = [];
  const t: TestBroker = {
    broker,
    port,
    url: `mq9://127.0.0.1:${port}`,
    dataDir,
    async client(connectOptions = {}, url = t.url) {
      const client = await connect(url, connectOptions);
      clients.push(client);
      return client;
    },
    async stop() {
      await broker.close({ drainTimeoutMs: 0 });
    },
    async start(more = {}) {
      broker = await Broker.start({ port, ...base, ...more });
      t.broker = broker;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}
