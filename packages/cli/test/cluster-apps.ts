// Checks that a cluster node's in-process apps (MCP, A2A gateway, orchestrator) reach the NATS
// cluster: each connects with the node's own NATS credentials, so a secured cluster refuses them
// when one of those is not passed through.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type ConnectOptions, connect } from "@mq9/client";
import { A2AAgent } from "@mq9/client/a2a";
import { sendTextOverHttp, TranslatorExecutor, translatorCard } from "@mq9/testkit";
import { expect } from "vitest";
import { eventually, type Mq9NodeProcess } from "./cluster-harness.js";

/** Flags of a node whose orchestrator runs (the cluster tests' nodes have it off). */
export const WITH_ORCHESTRATOR = ["--orchestrator", "on"];

/**
 * MCP creates `mailbox` through the node's /mcp; an A2A agent, connected to the cluster as
 * `agent`, is reached through the node's /a2a gateway; the orchestrator's /api/tasks answers.
 */
export async function expectAppsServe(
  node: Mq9NodeProcess,
  agent: { servers: string[]; options: ConnectOptions },
  mailbox: string,
): Promise<void> {
  const http = `http://127.0.0.1:${node.httpPort}`;
  const mcp = new Client({ name: "cluster-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${http}/mcp`)));
  try {
    const created = (await mcp.callTool({ name: "mq9_create_mailbox", arguments: { name: mailbox } })) as {
      structuredContent?: unknown;
      content?: unknown;
    };
    expect(created.structuredContent, JSON.stringify(created.content)).toEqual({
      mail_address: mailbox,
      created: true,
    });
  } finally {
    await mcp.close();
  }

  const client = await connect(agent.servers, agent.options);
  const a2a = await A2AAgent.start(client, { card: translatorCard, executor: new TranslatorExecutor() });
  try {
    // The registration reaches each node's registry within its follow interval; the gateway's
    // lookups go to any node of the queue group, so both the card and a send are waited for.
    const card = await eventually(
      async () => {
        const res = await fetch(`${http}/a2a/translator/.well-known/agent-card.json`);
        return res.status === 200 ? ((await res.json()) as { name: string }) : undefined;
      },
      30_000,
      "the gateway to find the agent",
    );
    expect(card.name).toBe("Translator");
    const state = await eventually(
      async () => {
        const sent = await sendTextOverHttp(`${http}/a2a/translator`, "hi");
        return sent.includes("no registered agent") ? undefined : sent;
      },
      30_000,
      "every node to know the agent",
    );
    expect(state).toBe("TASK_STATE_COMPLETED");
  } finally {
    await a2a.stop();
    await client.close();
  }

  await eventually(
    async () => (await fetch(`${http}/api/tasks`)).status === 200,
    60_000,
    `the orchestrator of ${node.nodeId} to connect (its log: ${node.output().slice(-600)})`,
  );
}
