import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { type ConnectedTestBroker, connected, startBroker, type TestBrokerOptions } from "@mq9/testkit";

export { sleep } from "@mq9/testkit";

export type TestBroker = ConnectedTestBroker;

export function tempDir(prefix = "mq9-registry-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * A real embedded broker on a free port with this package's registry (`registry`: its settings,
 * or `false` for a broker without one), a fresh data directory unless given, and one client.
 */
export function startTestBroker(options: TestBrokerOptions = {}): Promise<TestBroker> {
  return connected(startBroker(options));
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
