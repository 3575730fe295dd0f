import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterMembers, PRESENCE_SUBJECT } from "../src/cluster/cluster-members.js";
import type { Logger } from "../src/logger.js";
import { captureLogger, type Started, startListener, waitUntil } from "./nats-harness.js";

// The roster's rules at a short presence interval, over the embedded listener's plain pub/sub:
// peers are ClusterMembers of their own, or news published by hand as a peer would.
const INTERVAL_MS = 40;

describe("cluster roster (presence news)", () => {
  let broker: Started;
  let nc: NatsConnection;
  const rosters: ClusterMembers[] = [];

  beforeAll(async () => {
    broker = await startListener();
    nc = await broker.nats();
  });
  afterAll(async () => {
    for (const roster of rosters) roster.leave();
    await broker.stop();
  });

  const roster = async (node: string, intervalMs = INTERVAL_MS, downRetentionMs?: number) => {
    const logger = captureLogger();
    const members = new ClusterMembers(
      await broker.nats(),
      { node, instance: `${node}/${rosters.length}`, cluster: "home" },
      () => ({ natsServer: "n1:4222", duties: node === "a" ? ["expiry"] : [] }),
      logger as unknown as Logger,
      intervalMs,
      downRetentionMs,
    );
    members.start();
    rosters.push(members);
    return { members, logger, logged: () => logger.entries.map((e) => String(e.msg ?? e.obj)) };
  };
  const news = (node: string, instance: string, extra: Record<string, unknown> = {}) =>
    nc.publish(
      PRESENCE_SUBJECT,
      JSON.stringify({ node, instance, cluster: "home", started_at: Date.now(), duties: [], ...extra }),
    );
  const states = (members: ClusterMembers) => members.list().map((m) => `${m.node}:${m.state}`);

  it("two nodes list each other at once, with what each said of itself", async () => {
    const a = await roster("a");
    const b = await roster("b");
    await waitUntil(() => a.members.list().length === 2 && b.members.list().length === 2);
    expect(states(a.members)).toEqual(["a:up", "b:up"]);
    expect(b.members.list()[1]).toMatchObject({
      node: "a",
      self: false,
      nats_server: "n1:4222",
      duties: ["expiry"],
    });
    expect(b.logged()).toContain("node a joined the cluster (on nats-server n1:4222)");
    b.members.leave();
    await waitUntil(() => a.members.list().length === 1, 2_000, "a to drop b");
    expect(a.logged()).toContain("node b left the cluster");
    a.members.leave();
  });

  it("a silent node is missing after three intervals, then down since its last news, until any node forgets it", async () => {
    const c = await roster("c");
    const f = await roster("f");
    news("quiet", "quiet/1");
    await waitUntil(() => states(c.members).includes("quiet:up") && states(f.members).includes("quiet:up"));
    await waitUntil(() => states(c.members).includes("quiet:missing"), 2_000, "quiet to go missing");
    await waitUntil(
      () => c.logged().some((m) => m.startsWith("node quiet has not been heard for")),
      2_000,
      "the missing line",
    );
    await waitUntil(
      () => states(c.members).includes("quiet:down") && states(f.members).includes("quiet:down"),
      5_000,
      "quiet to be down",
    );
    const quiet = c.members.list().find((m) => m.node === "quiet");
    expect(quiet?.since).toBeLessThanOrEqual(Date.now() - (quiet?.last_heard_ms ?? 0));
    await waitUntil(
      () => c.logged().some((m) => m.startsWith("node quiet is down: not heard for")),
      2_000,
      "the down line",
    );
    // Only a node that is not up is forgotten: not a live peer, nor the node asked.
    expect(c.members.forget("f")).toBe("up");
    expect(c.members.forget("c")).toBe("self");
    expect(c.members.forget("nobody")).toBe("unknown");
    expect(states(c.members)).toEqual(["c:up", "f:up", "quiet:down"]);
    expect(c.members.forget("quiet")).toBe("forgotten");
    expect(states(c.members)).toEqual(["c:up", "f:up"]);
    // The other nodes forget it too.
    await waitUntil(() => states(f.members).length === 2, 2_000, "f to forget quiet");
    expect(states(f.members)).toEqual(["f:up", "c:up"]);
    expect(f.logged()).toContain("node quiet forgotten: dropped from the roster");
    c.members.leave();
    f.members.leave();
  });

  it("a node that is down is dropped once its retention has passed", async () => {
    const g = await roster("g", INTERVAL_MS, INTERVAL_MS * 40);
    news("gone", "gone/1");
    await waitUntil(() => states(g.members).includes("gone:down"), 5_000, "gone to be down");
    await waitUntil(() => !states(g.members).includes("gone:down"), 5_000, "gone to be dropped");
    expect(states(g.members)).toEqual(["g:up"]);
    expect(g.logged().some((m) => m.startsWith("node gone dropped from the roster: down"))).toBe(true);
    g.members.leave();
  });

  it("a restart under the same id replaces the silent process; two live ones under one id both stay", async () => {
    const d = await roster("d");
    news("p", "p/1", { started_at: Date.now() - 1_000 });
    await waitUntil(() => states(d.members).includes("p:up"));
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 2));
    news("p", "p/2");
    await waitUntil(() => d.members.list().some((m) => m.instance === "p/2"));
    expect(
      d.members
        .list()
        .filter((m) => m.node === "p")
        .map((m) => m.instance),
    ).toEqual(["p/2"]);
    expect(d.logged()).toContain("node p restarted");
    // Twins keep announcing, each within an interval: neither replaces the other.
    const twins = setInterval(() => {
      news("q", "q/1", { started_at: 1 });
      news("q", "q/2", { started_at: 2 });
    }, INTERVAL_MS / 4);
    try {
      await waitUntil(() => d.members.list().filter((m) => m.node === "q").length === 2);
      await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 3));
      expect(
        d.members
          .list()
          .filter((m) => m.node === "q")
          .map((m) => m.instance),
      ).toEqual(["q/1", "q/2"]);
    } finally {
      clearInterval(twins);
    }
    d.members.leave();
  });

  it("news of another cluster is kept apart as a stranger while it is heard; bad news is ignored", async () => {
    // A longer interval: the stranger must still count when it is first looked at.
    const e = await roster("e", 400);
    nc.publish(PRESENCE_SUBJECT, "not json");
    nc.publish(PRESENCE_SUBJECT, JSON.stringify({ node: "x", instance: "x/1", cluster: "home" }));
    nc.publish(
      PRESENCE_SUBJECT,
      JSON.stringify({
        node: "s",
        instance: "s/1",
        cluster: "elsewhere",
        started_at: Date.now(),
        duties: [],
      }),
    );
    await waitUntil(() => e.members.strangers().length === 1);
    expect(e.members.strangers()).toEqual([{ node: "s", cluster: "elsewhere" }]);
    expect(e.members.list().map((m) => m.node)).toEqual(["e"]);
    expect(e.logger.entries.filter((entry) => entry.level === "error")).toHaveLength(1);
    await waitUntil(() => e.members.strangers().length === 0, 5_000, "the stranger to fall silent");
    // A node's fields of the wrong type are dropped, not passed on to the API.
    news("y", "y/1", { nats_server: { host: "n1" }, http_port: "8080", duties: ["expiry", 7] });
    await waitUntil(() => e.members.list().some((m) => m.node === "y"));
    expect(e.members.list()[1]).toMatchObject({ nats_server: null, http_port: null, duties: ["expiry"] });
    e.members.leave();
  });
});
