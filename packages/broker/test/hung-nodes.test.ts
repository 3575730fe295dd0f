import type { NatsConnection } from "nats";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ClusterMembers, PRESENCE_SUBJECT } from "../src/cluster/cluster-members.js";
import { HungNodes } from "../src/cluster/hung-nodes.js";
import { atLeast, SystemAccount } from "../src/cluster/system-account.js";
import type { Logger } from "../src/logger.js";
import { captureLogger, type Started, startListener, waitUntil } from "./nats-harness.js";

// Who acts on a silent node, when and how often, at a short presence interval over the embedded
// listener's plain pub/sub (it has no system account: closing a connection is cluster-hung.test.ts's,
// on real nats-servers).
const INTERVAL_MS = 40;
const DROP_AFTER_MS = 400;
const CONNECTION = { server_id: "NSRV1", client_id: 7, name: "mq9-quiet-broker" };

describe("hung nodes", () => {
  let broker: Started;
  let nc: NatsConnection;
  const stops: (() => void)[] = [];

  beforeAll(async () => {
    broker = await startListener();
    nc = await broker.nats();
  });
  // Each test's nodes leave after it, so the next test's first node up is its own.
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
  });
  afterAll(async () => {
    await broker.stop();
  });

  const node = async (id: string) => {
    const logger = captureLogger();
    const members = new ClusterMembers(
      await broker.nats(),
      { node: id, instance: `${id}/1`, cluster: "home" },
      () => ({ natsServer: "n1:4222", duties: [] }),
      logger as unknown as Logger,
      INTERVAL_MS,
    );
    const hung = new HungNodes(members, logger as unknown as Logger, {
      dropAfterMs: DROP_AFTER_MS,
      intervalMs: INTERVAL_MS,
      connected: () => true,
    });
    members.start();
    hung.start();
    stops.push(() => {
      hung.stop();
      members.leave();
    });
    return { members, hung, logged: () => logger.entries.map((e) => String(e.msg ?? e.obj)) };
  };
  const news = (id: string, extra: Record<string, unknown> = {}) =>
    nc.publish(
      PRESENCE_SUBJECT,
      JSON.stringify({ node: id, instance: `${id}/1`, cluster: "home", started_at: 1, duties: [], ...extra }),
    );

  it("the first node up by id says once what to do about a node silent for the bound; a slow one is left alone", async () => {
    const a = await node("a");
    const b = await node("b");
    news("quiet", { nats_server: "n3:4222", nats_connection: CONNECTION });
    // Slow: silent for longer than the missing threshold (three intervals), less than the bound.
    const slow = setInterval(() => news("slow"), DROP_AFTER_MS / 2);
    try {
      await waitUntil(
        () => a.logged().some((m) => m.startsWith("node quiet looks hung")),
        5_000,
        "a's line on quiet",
      );
      const line = a.logged().find((m) => m.startsWith("node quiet looks hung")) ?? "";
      expect(line).toContain("client id 7, named mq9-quiet-broker on nats-server n3:4222, server id NSRV1");
      expect(line).toContain('request $SYS.REQ.SERVER.NSRV1.KICK with {"cid":7}');
      expect(line).toContain("--nats-system-user");
      expect(a.members.list().find((m) => m.node === "quiet")?.nats_connection).toEqual(CONNECTION);
      // Long enough for many more looks: quiet is down after thirty intervals.
      await waitUntil(
        () => a.members.list().some((m) => m.node === "quiet" && m.state === "down"),
        5_000,
        "quiet to be down",
      );
      expect(a.logged().filter((m) => m.startsWith("node quiet looks hung"))).toHaveLength(1);
      expect(b.logged().filter((m) => m.includes("looks hung"))).toEqual([]);
      expect(a.logged().filter((m) => m.startsWith("node slow looks hung"))).toEqual([]);
      expect(a.logged().some((m) => m.startsWith("node slow has not been heard"))).toBe(true);
    } finally {
      clearInterval(slow);
    }
  });

  it("a node that was paused itself judges no one on its first look after the pause", async () => {
    const a = await node("a");
    const alive = setInterval(() => news("alive", { nats_connection: CONNECTION }), INTERVAL_MS);
    try {
      await waitUntil(() => a.members.list().some((m) => m.node === "alive"), 5_000, "a to hear alive");
      // The look a paused process makes when it resumes: late, before the news queued meanwhile.
      await a.hung.check(Date.now() + 10 * DROP_AFTER_MS);
      expect(a.logged().filter((m) => m.includes("node alive looks hung"))).toEqual([]);
    } finally {
      clearInterval(alive);
    }
  });

  it("a node that resumes under a new connection and falls silent again is named again", async () => {
    const c = await node("c");
    news("again", { nats_connection: { ...CONNECTION, client_id: 8 } });
    await waitUntil(() => c.logged().some((m) => m.startsWith("node again looks hung")), 5_000, "first");
    news("again", { nats_connection: { ...CONNECTION, client_id: 9 } });
    await waitUntil(
      () => c.logged().filter((m) => m.startsWith("node again looks hung")).length === 2,
      5_000,
      "second",
    );
    expect(c.logged().filter((m) => m.startsWith("node again looks hung"))[1]).toContain('{"cid":9}');
  });

  it("a silent node whose news names an up node's connection is left alone, said once", async () => {
    const e = await node("e");
    const live = setInterval(() => news("f", { nats_connection: CONNECTION }), INTERVAL_MS);
    try {
      news("ghost", { nats_connection: CONNECTION });
      await waitUntil(() => e.logged().some((m) => m.startsWith("node ghost is silent")), 5_000, "e's line");
      expect(e.logged().find((m) => m.startsWith("node ghost is silent"))).toContain(
        "is node f's, which is up: left alone",
      );
      await waitUntil(() => e.members.list().some((m) => m.node === "ghost" && m.state === "down"), 5_000);
      expect(e.logged().filter((m) => m.startsWith("node ghost is silent"))).toHaveLength(1);
      expect(e.logged().filter((m) => m.includes("looks hung"))).toEqual([]);
    } finally {
      clearInterval(live);
    }
  });

  it("news with a malformed connection keeps the node, without its connection", async () => {
    const d = await node("d");
    news("odd", { nats_connection: { server_id: "S", client_id: "7", name: "x" } });
    await waitUntil(() => d.members.list().some((m) => m.node === "odd"));
    expect(d.members.list().find((m) => m.node === "odd")?.nats_connection).toBeNull();
  });

  it("a user no server answers as the system account is refused with what to do", async () => {
    const logger = captureLogger() as unknown as Logger;
    const options = { servers: [`127.0.0.1:${broker.port}`], nodeId: "x" };
    await expect(SystemAccount.connect(options, { user: "app", password: "app" }, logger)).rejects.toThrow(
      /NATS user app cannot drop hung nodes: no nats-server answers its \$SYS\.REQ\.SERVER\.PING, so it is not a user of the system account/,
    );
  });

  it("compares nats-server versions", () => {
    expect(atLeast("2.9.10", "2.10.0")).toBe(false);
    expect(atLeast("2.10.0", "2.10.0")).toBe(true);
    expect(atLeast("2.14.10-RC.1", "2.10.0")).toBe(true);
    expect(atLeast("unknown", "2.10.0")).toBe(false);
  });
});
