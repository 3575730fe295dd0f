import {
  OtlpReceiver,
  type ReceivedSpan,
  registerTestTracing,
  startBroker,
  type TestBroker,
  type TestTracing,
  until,
} from "@mq9/testkit";
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Mq9Client } from "../src/index.js";

const PRODUCER = 4;
const CONSUMER = 5;
const CLIENT = 3;
const SERVER = 2;

let receiver: OtlpReceiver;
let tracing: TestTracing;
let t: TestBroker;
let client: Mq9Client;

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  tracing = registerTestTracing(receiver.url, "test-agent");
  t = await startBroker({ registry: false, telemetry: { otlpEndpoint: receiver.url } });
  client = await t.client();
});
afterAll(async () => {
  await t.close();
  await tracing.shutdown();
  await receiver.close();
});

/** Sends every span both sides have ended. */
async function flush(): Promise<void> {
  await tracing.flush();
  await t.broker.telemetry?.flush();
}

const childOf = (parent: ReceivedSpan) => (span: ReceivedSpan) =>
  span.traceId === parent.traceId && span.parentSpanId === parent.spanId;

describe("OpenTelemetry through a mailbox", () => {
  it("SEND → consume: producer, broker and consumer spans of one trace, linked, with messaging attributes", async () => {
    await client.createMailbox({ name: "otel.jobs" });
    const tracer = trace.getTracer("test");
    let msgId = 0;
    const work = await tracer.startActiveSpan("agent work", async (span) => {
      msgId = await client.send("otel.jobs", "job 1", { priority: "urgent" });
      span.end();
      return span.spanContext();
    });

    let insideHandler: string | undefined;
    const consumer = client.consume(
      "otel.jobs",
      async () => {
        insideHandler = trace.getActiveSpan()?.spanContext().spanId;
      },
      { group: "workers", deliver: "earliest" },
    );
    await until("the handler", () => insideHandler !== undefined);
    await consumer.stop();
    await flush();

    const send = await receiver.span("send otel.jobs", (s) => s.name === "send otel.jobs");
    expect(send).toMatchObject({
      service: "test-agent",
      kind: PRODUCER,
      traceId: work.traceId,
      parentSpanId: work.spanId,
    });
    expect(send.attributes).toMatchObject({
      "messaging.system": "mq9",
      "messaging.destination.name": "otel.jobs",
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
      "messaging.message.id": String(msgId),
      "messaging.message.body.size": 5,
    });

    const brokerSend = await receiver.span("the broker's SEND", (s) => s.kind === SERVER && childOf(send)(s));
    expect(brokerSend).toMatchObject({ service: "mq9", name: "mq9 msg.send", kind: SERVER });
    expect(brokerSend.attributes).toMatchObject({
      "messaging.system": "mq9",
      "messaging.destination.name": "otel.jobs",
      "messaging.message.id": String(msgId),
    });
    await receiver.span("the store commit", (s) => s.name === "mq9 store commit" && childOf(brokerSend)(s));

    const process = await receiver.span("process otel.jobs", (s) => s.name === "process otel.jobs");
    expect(process).toMatchObject({ kind: CONSUMER, traceId: work.traceId, parentSpanId: send.spanId });
    expect(process.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    expect(process.attributes).toMatchObject({
      "messaging.operation.type": "process",
      "messaging.message.id": String(msgId),
      "messaging.consumer.group.name": "workers",
    });
    // The handler ran inside the process span, so the agent's own spans nest under it.
    expect(insideHandler).toBe(process.spanId);
  });

  it("fetch(): a client span whose broker FETCH and long-poll wait are its children, linked to the producer", async () => {
    await client.createMailbox({ name: "otel.poll" });
    const fetching = client.fetch("otel.poll", { group: "g", maxWaitMs: 4_000 });
    // The FETCH waits at the broker (its group made by its empty claim) until this SEND wakes it.
    await until("the waiting FETCH's group", async () => (await client.listGroups("otel.poll")).length > 0);
    const msgId = await client.send("otel.poll", "late");
    const [message] = await fetching;
    expect(message.msgId).toBe(msgId);
    expect(message.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await flush();

    const send = await receiver.span("send otel.poll", (s) => s.name === "send otel.poll");
    const fetch = await receiver.span("fetch otel.poll", (s) => s.name === "fetch otel.poll");
    expect(fetch).toMatchObject({ kind: CLIENT, parentSpanId: "" });
    expect(fetch.attributes).toMatchObject({
      "messaging.operation.type": "receive",
      "messaging.batch.message_count": 1,
      "messaging.consumer.group.name": "g",
    });
    expect(fetch.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    const brokerFetch = await receiver.span("the broker's FETCH", childOf(fetch));
    expect(brokerFetch).toMatchObject({ name: "mq9 msg.fetch", kind: SERVER });
    expect(brokerFetch.attributes["messaging.batch.message_count"]).toBe(1);
    await receiver.span(
      "the long-poll wait",
      (s) => s.name === "mq9 long-poll wait" && childOf(brokerFetch)(s),
    );
  });

  it("a traceparent of the caller's own wins over the span's", async () => {
    await client.createMailbox({ name: "otel.own" });
    const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await client.send("otel.own", "x", { headers: { traceparent: own } });
    const [message] = await client.fetch("otel.own", { deliver: "earliest" });
    expect(message.headers.traceparent).toBe(own);
  });
});
