import { readFileSync } from "node:fs";
import { Subjects } from "@mq9/protocol";
import type { TestBroker } from "@mq9/testkit";
import { onEachBrokerKind } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { otlpPackages } from "../src/telemetry/load-otlp.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TRACESTATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

type Item = { msg_id: number; headers?: Record<string, string>; header: number[] | null };
type Fetched = { error: string; messages: Item[] };

onEachBrokerKind((start) => {
  describe("W3C trace context through a mailbox (plain nats client)", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await start({ registry: false });
      await t.request(Subjects.mailboxCreate, { name: "traced" });
    });
    afterAll(() => t.close());

    it("a SEND's traceparent and tracestate come back with the message, from a group and a plain FETCH", async () => {
      const sent = await t.request<{ error: string; msg_id: number }>(Subjects.send("traced"), "hello", {
        headers: { traceparent: TRACEPARENT, tracestate: TRACESTATE, "mq9-priority": "urgent" },
      });
      expect(sent.error).toBe("");
      for (const body of [{ group_name: "workers", deliver: "earliest" }, { deliver: "earliest" }]) {
        const fetched = await t.request<Fetched>(Subjects.fetch("traced"), body);
        expect(fetched.error).toBe("");
        const [item] = fetched.messages;
        expect(item.msg_id).toBe(sent.msg_id);
        expect(item.headers).toMatchObject({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
        const raw = new TextDecoder().decode(Uint8Array.from(item.header ?? []));
        expect(raw).toContain(`traceparent: ${TRACEPARENT}\r\n`);
        expect(raw).toContain(`tracestate: ${TRACESTATE}\r\n`);
      }
    });

    it("a message sent without trace context has none", async () => {
      await t.request(Subjects.send("traced"), "plain");
      const fetched = await t.request<Fetched>(Subjects.fetch("traced"), { deliver: "earliest" });
      const plain = fetched.messages.at(-1);
      expect(plain?.header).toBeNull();
      expect(plain?.headers?.traceparent).toBeUndefined();
    });
  });
});

describe("OTLP export's SDK, an optional peer of the broker", () => {
  it("the install line names each SDK package at the version the checkout tests", () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      devDependencies: Record<string, string>;
      dependencies: Record<string, string>;
    };
    const sdk = Object.entries(manifest.devDependencies).filter(([name]) =>
      name.startsWith("@opentelemetry/"),
    );
    expect(sdk.length).toBeGreaterThan(0);
    expect(otlpPackages()).toEqual(sdk.map(([name, version]) => `${name}@${version}`));
    // The API alone is what a broker without export loads.
    expect(Object.keys(manifest.dependencies).filter((name) => name.startsWith("@opentelemetry/"))).toEqual([
      "@opentelemetry/api",
    ]);
  });
});
