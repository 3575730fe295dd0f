import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { type ConnectedTestBroker, connected, startBroker, type TestBrokerOptions } from "@mq9/testkit";
import { expect } from "vitest";

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

/**
 * recall@1 and recall@5 of `queries` (each naming the agent it wants) as DISCOVERs of
 * `body(query)`, five answers each; every answer must come without an error or a warning.
 */
export async function recallOf(
  t: TestBroker,
  queries: readonly { query: string; expect: string }[],
  body: (query: string) => Record<string, unknown> = (query) => ({ semantic: query }),
): Promise<{ at1: number; at5: number }> {
  let at1 = 0;
  let at5 = 0;
  for (const { query, expect: want } of queries) {
    const reply = (await t.request(Subjects.agentDiscover, { ...body(query), limit: 5 })) as {
      error: string;
      agents: { name: string }[];
      warning?: string;
    };
    expect(reply.error).toBe("");
    expect(reply.warning).toBeUndefined();
    const at = reply.agents.findIndex((a) => a.name === want);
    if (at === 0) at1++;
    if (at >= 0) at5++;
  }
  return { at1: at1 / queries.length, at5: at5 / queries.length };
}
