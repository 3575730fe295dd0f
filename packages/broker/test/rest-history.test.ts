import { Subjects } from "@mq9/protocol";
import { until } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextReadingAt } from "../src/http/rest/metrics-history.js";
import { startTestBroker, type TestBroker } from "./harness.js";
import { RestContract } from "./rest-contract.js";

type Column = (number | null)[];
interface MailboxHistory {
  interval_s: number;
  tracked: boolean;
  at: number[];
  series: Record<"messages" | "bytes" | "sends_per_s" | "fetches_per_s", Column>;
  groups: { name: string; series: Record<"lag" | "pending" | "leased" | "lag_seconds", Column> }[];
}
interface History {
  interval_s: number;
  samples: { at: number; sends_per_s: number; messages: number }[];
}

const last = (column: Column) => column.at(-1);

describe("history readings and the broker's time", () => {
  it("a slow reading (a backlog of millions to count) holds the next one back, to 2 % of the time", () => {
    // Quick readings wait only for the next interval's tick.
    expect(nextReadingAt(10_000, 40)).toBe(12_000);
    expect(nextReadingAt(10_000, 500)).toBe(35_000);
  });
});

describe("REST API v1 history: kept by the broker with nobody looking", () => {
  let t: TestBroker;
  let contract: RestContract;
  const get = async <T>(url: string) => {
    const path = url.startsWith("/api/v1/mailboxes/")
      ? "/api/v1/mailboxes/{address}/history"
      : url.split("?")[0];
    return (await contract.check({ method: "GET", path, url, status: 200 })).body as T;
  };

  beforeAll(async () => {
    // Short intervals so that a test sees several samples; two mailboxes at most.
    t = await startTestBroker({
      registry: false,
      http: { port: 0, history: { intervalMs: 100, coarseEvery: 3, maxMailboxes: 2, maxGroups: 4 } },
    });
    const base = `http://127.0.0.1:${t.broker.http!.port}`;
    contract = new RestContract(await (await fetch(`${base}/api/v1/openapi.json`)).json(), base);
  });
  afterAll(() => t.close());

  it("samples a mailbox's traffic and its group's lag without any API call watching", async () => {
    await t.request(Subjects.mailboxCreate, { name: "hist.a" });
    for (let i = 0; i < 5; i++) expect((await t.request(Subjects.send("hist.a"), `m${i}`)).error).toBe("");
    const fetched = await t.request(Subjects.fetch("hist.a"), {
      group_name: "workers",
      deliver: "earliest",
      config: { num_msgs: 2, max_wait_ms: 0 },
    });
    expect(fetched.messages).toHaveLength(2);
    const mailbox = await until("a sample of the group's leases", async () => {
      const h = await get<MailboxHistory>("/api/v1/mailboxes/hist.a/history?range=60");
      return last(h.groups[0]?.series.leased ?? []) === 2 ? h : undefined;
    });
    expect(mailbox.tracked).toBe(true);
    expect(Math.max(...mailbox.series.sends_per_s.map((v) => v ?? 0))).toBeGreaterThan(0);
    expect(Math.max(...mailbox.series.fetches_per_s.map((v) => v ?? 0))).toBeGreaterThan(0);
    expect(last(mailbox.series.messages)).toBe(5);
    expect(mailbox.groups.map((g) => g.name)).toEqual(["workers"]);
    expect(mailbox.interval_s).toBe(0.1);
    expect(mailbox.at.length).toBe(mailbox.series.messages.length);
    expect(last(mailbox.groups[0].series.lag)).toBe(5);
    expect(last(mailbox.groups[0].series.pending)).toBe(3);
    const global = await get<History>("/api/v1/metrics/history?range=60");
    expect(global.interval_s).toBe(0.1);
    expect(global.samples.some((s) => s.sends_per_s > 0)).toBe(true);
    expect(global.samples.at(-1)?.messages).toBeGreaterThanOrEqual(5);
  });

  it("answers a range beyond the fine ring from the coarse one, each point an average", async () => {
    // The fine ring keeps 720 samples of 0.1 s: 72 s. A longer range reads the 0.3 s samples.
    const coarse = await until("a coarse sample", async () => {
      const h = await get<MailboxHistory>("/api/v1/mailboxes/hist.a/history?range=600");
      return last(h.series.messages) === 5 ? h : undefined;
    });
    expect(coarse.interval_s).toBeCloseTo(0.3);
  });

  it("keeps at most maxMailboxes histories; a deleted mailbox frees its place", async () => {
    await t.request(Subjects.mailboxCreate, { name: "hist.b" });
    await t.request(Subjects.mailboxCreate, { name: "hist.c" });
    await until(
      "hist.b tracked",
      async () => (await get<MailboxHistory>("/api/v1/mailboxes/hist.b/history")).tracked,
    );
    const untracked = await get<MailboxHistory>("/api/v1/mailboxes/hist.c/history");
    expect(untracked).toMatchObject({ tracked: false, at: [], series: { messages: [] } });
    await t.request(Subjects.mailboxRemove("hist.a"), {});
    await until(
      "hist.c tracked",
      async () => (await get<MailboxHistory>("/api/v1/mailboxes/hist.c/history")).tracked,
    );
  });
});
