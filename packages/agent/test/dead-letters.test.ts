import { boxName, startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeadLetters } from "../src/bus/dead-letters.js";
import { createEnvelope } from "../src/bus/envelope.js";
import { sendEnvelope } from "../src/bus/envelope-io.js";
import { BusNames } from "../src/bus/names.js";

describe("one dead-letter mailbox for what the bus gives up and what the broker gives up", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker();
  });
  afterAll(() => t.close());

  it("lists the bus's own letters and the messages the broker moved there, by trace too", async () => {
    const client = await t.client();
    const names = new BusNames(boxName("ns"));
    const letters = new DeadLetters(client, names);
    await letters.ensureMailbox();
    // An inbox whose dead letters go to the bus's, as an agent's and the router's do.
    const inbox = boxName("inbox");
    await client.ensureMailbox({ name: inbox, deadLetter: letters.mailbox, maxDeliver: 1 });
    const poison = createEnvelope({ msg_type: "query", source: "tester", target: inbox, payload: { n: 1 } });
    await sendEnvelope(client, inbox, poison);
    await letters.put("no agent for it", {
      envelope: createEnvelope({ msg_type: "query", source: "x", target: "y", payload: 2 }),
    });

    // Taken once and never ACKed: the broker moves it once its only lease runs out.
    const [taken] = await client.fetch(inbox, { group: "workers", deliver: "earliest", leaseMs: 100 });
    await client.nak(inbox, "workers", taken.msgId, { reason: "agent crashed" });
    let listed = await letters.list();
    for (let i = 0; i < 100 && listed.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      listed = await letters.list();
    }
    expect(listed.map((l) => l.reason)).toEqual(["no agent for it", "agent crashed"]);
    expect(listed[1].envelope).toMatchObject({ msg_id: poison.msg_id, trace_id: poison.trace_id });
    expect(listed[1].at).toBeGreaterThan(0);
    const ofTrace = await letters.list({ traceId: poison.trace_id });
    expect(ofTrace.map((l) => l.envelope?.msg_id)).toEqual([poison.msg_id]);
  });
});
