import { boxName, startBroker, type TestBroker } from "@mq9/testkit";
import { afterEach } from "vitest";
import { connect, type Mq9Client } from "../src/index.js";
import { TcpProxy } from "./tcp-proxy.js";

/** Undone after each test of the file that imports this module, last first. */
export const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A broker of its own, a client on it and a fresh mailbox. */
export async function setup(): Promise<{ t: TestBroker; client: Mq9Client; box: string }> {
  const t = await startBroker();
  cleanups.push(() => t.close());
  const client = await t.client();
  const box = await client.createMailbox({ name: boxName() });
  return { t, client, box };
}

/** A client that reaches the broker through a proxy counting what it carries, and a fresh mailbox. */
export async function setupProxied(): Promise<{ proxy: TcpProxy; client: Mq9Client; box: string }> {
  const { t } = await setup();
  const proxy = await TcpProxy.start(t.port);
  cleanups.push(() => proxy.close());
  const client = await connect(proxy.url);
  cleanups.push(() => client.close());
  const box = await client.createMailbox({ name: boxName() });
  return { proxy, client, box };
}

/** What is left for `group` once every lease has run out: nothing, if everything was ACKed. */
export async function leftOver(client: Mq9Client, box: string, group: string): Promise<number[]> {
  const messages = await client.fetch(box, { group, maxWaitMs: 0, leaseMs: 60_000 });
  return messages.map((m) => m.msgId);
}

/** Consumer options that keep handler failures off stderr. */
export const quiet = { onError: () => {} };
