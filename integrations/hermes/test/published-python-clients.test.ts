import { connect, type Mq9Client } from "@mq9/client";
import { A2AAgent } from "@mq9/client/a2a";
import {
  ensurePythonEnv,
  SlowExecutor,
  skipWithoutPython,
  slowCard,
  TranslatorExecutor,
  translatorCard,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mq9Serve, mq9OnPath, mq9Serve, python } from "./harness.js";

// biome-ignore lint/suspicious/noExplicitAny: the script prints JSON
type Json = Record<string, any>;

/**
 * The Python clients on PyPI, unchanged, against `mq9 serve`. robustmq 1.0.0 and
 * langchain-mq9 0.3.5 speak the superseded mailbox protocol (docs/python.md): these tests
 * pin what each of their operations gets from us — a clear error or, for the fire-and-
 * forget publishes, nothing stored — and that the broker keeps serving everyone else.
 */
describe.skipIf(skipWithoutPython())("the published Python clients against mq9 serve", () => {
  let py: string;
  let broker: Mq9Serve;
  let client: Mq9Client;
  const { env } = mq9OnPath();
  const run = async (args: string[]) => {
    const p = python(py, "published_clients.py", args, env);
    await p.next((l) => l.op === "done", 120_000);
    await p.exited;
    return Object.fromEntries(p.lines.map((l) => [l.op, l])) as Record<string, Json>;
  };
  const inbox = async (name: string) =>
    (await client.fetch(name, { deliver: "earliest", maxWaitMs: 0 })).length;

  beforeAll(async () => {
    py = await ensurePythonEnv();
    broker = await mq9Serve(env);
    client = await connect(broker.url);
  }, 900_000);

  afterAll(async () => {
    await client?.close();
    await broker?.close();
  });

  it("robustmq 1.0.0: every operation gets a clear answer, none stores anything, the broker carries on", async () => {
    await client.createMailbox({ name: "py.robustmq", ttl: 0 });
    const ops = await run(["robustmq", broker.url, "py.robustmq"]);
    expect(ops.connect.ok).toBe(true);
    // Our reply is {"error":"","mail_address":…}; the SDK takes any "error" key as a failure
    // (and would then look for the old "mail_id").
    expect(ops.create).toMatchObject({ ok: false, error: "Mq9Error: " });
    expect(ops["create public"]).toMatchObject({ ok: false });
    // Old per-priority publishes have no reply subject: nothing to answer, nothing stored.
    for (const p of ["high", "normal", "low"]) expect(ops[`send ${p}`].ok).toBe(true);
    expect(ops["messages pushed to subscribe"].result).toBe(0);
    expect(await inbox("py.robustmq")).toBe(0);
    expect(ops.list.error).toBe("Mq9Error: unrecognized mq9 subject: $mq9.AI.MAILBOX.LIST.py.robustmq");
    expect(ops.delete.error).toBe("Mq9Error: unrecognized mq9 subject: $mq9.AI.MAILBOX.DELETE.py.robustmq.1");
    expect(ops.close.ok).toBe(true);
    await client.send("py.robustmq", "still fine");
    expect(await inbox("py.robustmq")).toBe(1);
  }, 300_000);

  it("langchain-mq9 0.3.5: its six tools called directly get the same answers", async () => {
    await client.createMailbox({ name: "py.langchain", ttl: 0 });
    const ops = await run(["langchain", broker.url, "py.langchain"]);
    expect(ops.tools.result).toEqual([
      "CreateMailboxTool",
      "CreatePublicMailboxTool",
      "DeleteMessageTool",
      "GetMessagesTool",
      "ListMessagesTool",
      "SendMessageTool",
    ]);
    expect(ops.CreateMailboxTool).toMatchObject({ ok: false, error: "Mq9Error: " });
    expect(ops.CreatePublicMailboxTool).toMatchObject({ ok: false });
    expect(ops.SendMessageTool.ok).toBe(true);
    expect(await inbox("py.langchain")).toBe(0);
    expect(ops.GetMessagesTool.result).toBe("No messages found in mailbox 'py.langchain'.");
    expect(ops.ListMessagesTool.error).toMatch(
      /unrecognized mq9 subject: \$mq9\.AI\.MAILBOX\.LIST\.py\.langchain/,
    );
    expect(ops.DeleteMessageTool.error).toMatch(/unrecognized mq9 subject/);
  }, 300_000);

  it("a2a-sdk 1.3.0's client through the A2A gateway: send, stream, get, cancel", async () => {
    const agents = [
      await A2AAgent.start(client, {
        card: translatorCard,
        executor: new TranslatorExecutor(),
        onError: () => {},
      }),
      await A2AAgent.start(client, { card: slowCard, executor: new SlowExecutor(), onError: () => {} }),
    ];
    try {
      const ops = await run(["a2a-sdk", `${broker.http}/a2a/translator`, `${broker.http}/a2a/slow.worker`]);
      const sent = ops.send.result as Json;
      expect(sent.status.state).toBe("TASK_STATE_COMPLETED");
      expect(sent.artifacts[0].parts.map((p: Json) => p.text).join("")).toBe("FR: BONJOUR");
      const events = ops.stream.result as Json[];
      expect(events.length).toBeGreaterThan(1);
      expect(events.at(-1)!.task.status.state).toBe("TASK_STATE_COMPLETED");
      expect(ops.get.result).toMatchObject({ id: sent.id, status: { state: "TASK_STATE_COMPLETED" } });
      const started = ops["send non-blocking"].result as Json;
      expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]).toContain(started.status.state);
      expect(ops.cancel.result).toMatchObject({ id: started.id, status: { state: "TASK_STATE_CANCELED" } });
      // Canceling a canceled task answers with it (the SDK's handler is idempotent); a completed one cannot be.
      expect(ops["cancel again"].result).toMatchObject({
        id: started.id,
        status: { state: "TASK_STATE_CANCELED" },
      });
      expect(ops["cancel completed"]).toMatchObject({ ok: false });
      expect(ops["cancel completed"].error).toMatch(/not cancelable/i);
      expect(ops["get unknown"]).toMatchObject({ ok: false });
    } finally {
      for (const agent of agents) await agent.stop();
    }
  }, 300_000);
});
