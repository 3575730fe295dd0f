import type { Mq9Client } from "@mq9/client";
import { A2AClient } from "@mq9/client/a2a";
import { boxName, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  lenientJsonSchema,
  runTool,
  selectTools,
  strictJsonSchema,
  TOOLS,
  ToolArgumentsError,
  type ToolContext,
} from "../src/index.js";

const tool = (name: string) => TOOLS.find((t) => t.name === name)!;

describe("the tool descriptions", () => {
  it("name each tool once, with a short description and a strict JSON schema", () => {
    expect(new Set(TOOLS.map((t) => t.name)).size).toBe(TOOLS.length);
    for (const t of TOOLS) {
      expect(t.name).toMatch(/^mq9_[a-z_]+$/);
      expect(t.description.length).toBeLessThan(300);
      const schema = strictJsonSchema(t.input);
      expect(schema.type).toBe("object");
      expect(schema.additionalProperties).toBe(false);
      expect([...(schema.required ?? [])].sort()).toEqual(Object.keys(schema.properties ?? {}).sort());
    }
  });
});

describe("runTool — against a real broker", () => {
  let t: TestBroker;
  let client: Mq9Client;
  let context: ToolContext;

  beforeAll(async () => {
    t = await startBroker({ registry: false });
    client = await t.client();
    context = { client, a2a: new A2AClient(client) };
  });
  afterAll(async () => {
    await context.a2a.close();
    await t.close();
  });

  it("checks the arguments, then runs the handler", async () => {
    const name = boxName("tools");
    expect(await runTool(tool("mq9_create_mailbox"), { name }, context)).toEqual({
      mail_address: name,
      created: true,
    });
    const sent = await runTool(tool("mq9_send_message"), { mail_address: name, payload: "hi" }, context);
    expect(sent.msg_id).toBeTypeOf("number");
    const read = await runTool(tool("mq9_query_mailbox"), { mail_address: name }, context);
    expect((read.messages as { payload: string }[]).map((m) => m.payload)).toEqual(["hi"]);
  });

  it("bad arguments throw ToolArgumentsError naming each problem; nothing is sent", async () => {
    const name = boxName("tools.bad");
    await client.createMailbox({ name });
    const error = await runTool(
      tool("mq9_send_message"),
      { mail_address: name, payload: 42, colour: "red" },
      context,
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ToolArgumentsError);
    expect((error as ToolArgumentsError).code).toBe("INVALID_ARGUMENTS");
    expect((error as Error).message).toMatch(/^invalid arguments for mq9_send_message: payload: .*string/);
    expect((error as Error).message).toMatch(/colour/);
    expect(await client.query(name, {})).toEqual([]);
  });
});

describe("selectTools", () => {
  it("picks tools by name and refuses an unknown one, naming the tools there are", async () => {
    const t = await startBroker({ registry: false });
    try {
      const client = await t.client();
      const { tools, context } = selectTools({ client, tools: ["mq9_wait", "mq9_send_message"] });
      expect(tools.map((tool) => tool.name)).toEqual(["mq9_wait", "mq9_send_message"]);
      expect(context.client).toBe(client);
      expect(() => selectTools({ client, tools: ["mq9_send"] })).toThrow(
        /unknown mq9 tool 'mq9_send'; the tools are mq9_create_mailbox, /,
      );
      await context.a2a.close();
    } finally {
      await t.close();
    }
  });
});

describe("lenientJsonSchema", () => {
  it("requires only the required arguments; the properties are the strict form's", () => {
    const send = tool("mq9_send_message");
    const lenient = lenientJsonSchema(send.input);
    expect(lenient.required).toEqual(["mail_address", "payload"]);
    expect(lenient.additionalProperties).toBe(false);
    expect(lenient.properties).toEqual(strictJsonSchema(send.input).properties);
  });
});
