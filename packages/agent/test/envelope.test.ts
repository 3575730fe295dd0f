import { describe, expect, it } from "vitest";
import { createEnvelope, decodeEnvelope, envelopeHeaders, forward, replyTo } from "../src/bus/envelope.js";
import { loopViolation, SeenMessages, TraceBudget } from "../src/bus/loop-guard.js";

describe("envelope", () => {
  const query = createEnvelope({
    msg_type: "query",
    source: "orchestrator",
    target: "*",
    payload: { text: "hi" },
    max_hops: 3,
  });

  it("a new message starts a trace at hop 0 with its source on the path", () => {
    expect(query).toMatchObject({
      msg_type: "query",
      hops: 0,
      max_hops: 3,
      priority: "normal",
      path: ["orchestrator"],
    });
    expect(query.msg_id).not.toBe(query.trace_id);
  });

  it("a reply keeps the trace, goes back to the asker and counts a hop", () => {
    const answer = replyTo(query, "summarizer", "result", { summary: "short" });
    expect(answer).toMatchObject({
      trace_id: query.trace_id,
      source: "summarizer",
      target: "orchestrator",
      hops: 1,
      in_reply_to: query.msg_id,
      path: ["orchestrator", "summarizer"],
    });
    expect(answer.msg_id).not.toBe(query.msg_id);
  });

  it("is mirrored in headers for plain mq9 tools", () => {
    expect(envelopeHeaders(query)).toMatchObject({
      "mq9-trace-id": query.trace_id,
      "mq9-msg-type": "query",
      "mq9-hops": "0",
    });
  });

  it("decoding refuses what is not an envelope, saying what is wrong", () => {
    expect(decodeEnvelope(JSON.parse(JSON.stringify(query)))).toEqual(query);
    expect(() => decodeEnvelope("text")).toThrow("an orchestrated message must be a JSON object");
    expect(() => decodeEnvelope({ ...query, msg_type: "shout" })).toThrow(/'msg_type' must be one of/);
    expect(() => decodeEnvelope({ ...query, hops: -1 })).toThrow("'hops' must be a whole number >= 0");
    expect(() => decodeEnvelope({ ...query, trace_id: "" })).toThrow("'trace_id' must be a non-empty string");
  });
});

describe("loop protection", () => {
  const start = createEnvelope({ msg_type: "query", source: "a", target: "b", payload: null, max_hops: 3 });

  it("stops a query coming back to an agent already on its path (A -> B -> A)", () => {
    const atB = forward(start, "b", "a");
    expect(loopViolation(atB, "a")).toBe("cycle: a -> b -> a");
    expect(loopViolation(start, "b")).toBeUndefined();
  });

  it("stops a message that used up max_hops", () => {
    let m = start;
    for (const hop of ["b", "c", "d"]) m = forward(m, hop, "x");
    expect(loopViolation(m, "e")).toBe("max_hops exhausted (3 of 3)");
  });

  it("caps the messages of one trace", () => {
    const budget = new TraceBudget(2);
    expect([budget.spend("t"), budget.spend("t"), budget.spend("t"), budget.spend("u")]).toEqual([
      true,
      true,
      false,
      true,
    ]);
  });

  it("recognises a message seen before, forgetting the oldest beyond its capacity", () => {
    const seen = new SeenMessages(2);
    expect([
      seen.firstTime("a"),
      seen.firstTime("a"),
      seen.firstTime("b"),
      seen.firstTime("c"),
      seen.firstTime("a"),
    ]).toEqual([true, false, true, true, true]);
  });
});
