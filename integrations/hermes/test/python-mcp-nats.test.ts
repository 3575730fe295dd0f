import { ensurePythonEnv, skipWithoutPython } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mq9Serve, mq9OnPath, mq9Serve, python } from "./harness.js";

// biome-ignore lint/suspicious/noExplicitAny: the script prints JSON
type Json = Record<string, any>;

/** The `mcp` and `nats-py` packages from PyPI (pinned in requirements-test.txt), unchanged, against `mq9 serve`. */
describe.skipIf(skipWithoutPython())("the published Python mcp and nats-py clients against mq9 serve", () => {
  let py: string;
  let broker: Mq9Serve;
  const { env } = mq9OnPath();
  const run = async (args: string[]) => {
    const p = python(py, "mcp_nats_clients.py", args, env);
    await p.next((l) => l.op === "done", 120_000);
    expect(await p.exited, p.stderr).toBe(0);
    return Object.fromEntries(p.lines.map((l) => [l.op, l])) as Record<string, Json>;
  };

  beforeAll(async () => {
    py = await ensurePythonEnv();
    broker = await mq9Serve(env);
  }, 900_000);

  afterAll(async () => {
    await broker?.close();
  });

  it("mcp: over stdio (`mq9 mcp`) and Streamable HTTP (/mcp), the tools answer as documented", async () => {
    const ops = await run(["mcp", broker.url, broker.http, "py.mcp"]);
    for (const transport of ["stdio", "http"]) {
      const box = `py.mcp.${transport}`;
      expect(ops[`${transport} tools`].result).toEqual(
        expect.arrayContaining(["mq9_create_mailbox", "mq9_send_message", "mq9_call_agent", "mq9_wait"]),
      );
      expect(ops[`${transport} create`].result).toEqual({ mail_address: box, created: true });
      expect(ops[`${transport} send normal`].result).toMatchObject({ mail_address: box });
      const fetched = ops[`${transport} fetch`].result.messages as Json[];
      expect(fetched.map((m) => [m.payload, m.priority])).toEqual([
        ["first", "critical"],
        ["second", "normal"],
      ]);
      expect(ops[`${transport} send to a bad name`]).toMatchObject({ ok: false });
      expect(ops[`${transport} send to a bad name`].error).toMatch(/'Bad Name' is not a mail address/);
      expect(ops[`${transport} discover`].result).toEqual({ agents: [] });
    }
  }, 300_000);

  it("nats-py: raw mq9 requests with headers, FETCH in priority order, ACK, clear errors", async () => {
    const ops = await run(["nats", broker.url, "py.nats"]);
    expect(ops.create.result).toEqual({ error: "", mail_address: "py.nats" });
    expect(ops["send normal"].result).toMatchObject({ error: "", msg_id: expect.any(Number) });
    const messages = ops.fetch.result.messages as Json[];
    expect(messages.map((m) => [Buffer.from(m.payload, "base64").toString(), m.priority])).toEqual([
      ["first", "critical"],
      ["second", "normal"],
    ]);
    expect(messages[0]).toMatchObject({ key: "k1", tags: ["a", "b"] });
    expect(ops.ack.result).toEqual({ error: "" });
    expect(ops["fetch after ack"].result).toMatchObject({ error: "", messages: [] });
    expect(ops["malformed json"].result.error).toMatch(/json/i);
    expect(ops["malformed json"].result.code).toEqual(expect.any(String));
    expect(ops["unknown subject"].result.error).toBe("unrecognized mq9 subject: $mq9.AI.MSG.NOPE.x");
  }, 300_000);
});
