import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker, type BrokerOptions } from "@mq9/broker";
import { Subjects } from "@mq9/protocol";
import { connect, type NatsConnection } from "nats";
import { type RegistrySettings, registryFactory } from "../src/index.js";

export interface TestBroker {
  broker: Broker;
  nc: NatsConnection;
  dataDir: string;
  /** An mq9 request with a JSON (or raw) body; returns the parsed JSON reply. */
  request<T = Record<string, unknown>>(
    subject: string,
    body?: Record<string, unknown> | string | Uint8Array,
  ): Promise<T & { error: string }>;
  close(): Promise<void>;
}

export function tempDir(prefix = "mq9-registry-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A real broker on a free port given this package's registry (`registry`: its settings, or
 * `false` for a broker without one), a fresh data directory unless given, and one client.
 */
export async function startTestBroker(
  options: Omit<BrokerOptions, "registry"> & { registry?: RegistrySettings | false } = {},
): Promise<TestBroker> {
  const dataDir = options.dataDir ?? tempDir();
  const registry = options.registry === false ? undefined : registryFactory(options.registry);
  const broker = await Broker.start({ port: 0, dataDir, sweepIntervalMs: 100, ...options, registry });
  const nc = await connect({ servers: `127.0.0.1:${broker.port}` });
  return {
    broker,
    nc,
    dataDir,
    async request(subject, body) {
      const bytes =
        body === undefined
          ? new Uint8Array()
          : body instanceof Uint8Array
            ? body
            : new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
      const reply = await nc.request(subject, bytes, { timeout: 10_000 });
      return JSON.parse(new TextDecoder().decode(reply.data));
    },
    async close() {
      await nc.close().catch(() => {});
      await broker.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Registers each card under a mailbox derived from its name, then waits until all are searchable. */
export async function registerCards(t: TestBroker, cards: readonly { name: string }[]): Promise<void> {
  for (const card of cards) {
    const reply = await t.request(Subjects.agentRegister, {
      ...card,
      version: "1.0.0",
      mailbox: `agent.${card.name.replace(/[^a-z0-9]+/g, ".")}`,
    });
    if (reply.error !== "") throw new Error(`REGISTER ${card.name}: ${reply.error}`);
  }
  await t.broker.registry!.indexed();
}
