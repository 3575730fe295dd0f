import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumMissing, launchChromium } from "./browser-harness.js";
import { runCli } from "./cli-harness.js";
import {
  answered,
  connectTo,
  eventually,
  everything,
  expectStoredOnce,
  ids,
  knownSubjects,
  type Mq9NodeProcess,
  mq9Client,
  payloads,
  type Reply,
  sendLoad,
  startNode,
  tcpProxy,
} from "./cluster-harness.js";

const missing = brokerKindMissing("cluster");

// Three nats-servers with routes, one PostgreSQL, three mq9 nodes: a attached to n1, b to n2,
// c to n3. NATS hands each request to one member of the queue group, any node: the tests read the
// nodes' /metrics to see which node answered what.
describe.skipIf(missing !== undefined)(`cluster${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let nats: NatsServers;
  let pg: PrivatePostgres;
  const nodes: Record<string, Mq9NodeProcess> = {};
  const conns: NatsConnection[] = [];
  let viaA: ReturnType<typeof mq9Client>;
  let viaB: ReturnType<typeof mq9Client>;
  let viaAny: ReturnType<typeof mq9Client>;

  const client = async (servers: string[]) => {
    const nc = await connectTo(servers);
    conns.push(nc);
    return nc;
  };
  const startNamed = async (nodeId: string, server: number) => {
    nodes[nodeId] = await startNode({ nodeId, nats: [nats.urls[server]], postgres: pg.url });
  };

  interface Member {
    node: string;
    instance: string;
    self: boolean;
    state: string;
    nats_server: string | null;
    http_port: number | null;
    http_url: string | null;
    duties: string[];
  }
  const roster = async (node: Mq9NodeProcess) => {
    const res = await fetch(`http://127.0.0.1:${node.httpPort}/api/v1/cluster`);
    expect(res.status).toBe(200);
    return (await res.json()) as { clustered: boolean; cluster: string; node: string; nodes: Member[] };
  };

  /** Publishes a node's presence news as another node (or another cluster's) would. */
  const announce = (node: string, cluster: string, extra = {}) =>
    conns[0].publish(
      "_mq9.cluster.presence",
      JSON.stringify({ node, instance: `${node}/1`, cluster, started_at: Date.now(), duties: [], ...extra }),
    );

  beforeAll(async () => {
    [nats, pg] = await Promise.all([startNatsServers({ size: 3 }), startPrivatePostgres()]);
    await Promise.all([startNamed("a", 0), startNamed("b", 1), startNamed("c", 2)]);
    viaA = mq9Client(await client([nats.urls[0]]));
    viaB = mq9Client(await client([nats.urls[1]]));
    viaAny = mq9Client(await client(nats.urls));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
    await Promise.all(Object.values(nodes).map((node) => node.stop()));
    await nats?.stop();
    await pg?.stop();
  }, 120_000);

  it("protocol — a plain nats client gets one broker's behaviour through any server", async () => {
    expect(await viaA("$mq9.AI.MAILBOX.CREATE", { name: "proto", ttl: 3600 })).toEqual({
      error: "",
      mail_address: "proto",
    });
    expect((await viaB("$mq9.AI.MAILBOX.CREATE", { name: "proto" })).error).toMatch(/exists/);
    const send = (via: typeof viaA, body: string, headers?: Record<string, string>) =>
      via("$mq9.AI.MSG.SEND.proto", body, { headers });
    expect(await send(viaA, "n0")).toEqual({ error: "", msg_id: 0 });
    expect(await send(viaB, "u1", { "mq9-priority": "urgent" })).toEqual({ error: "", msg_id: 1 });
    expect(await send(viaAny, "c2", { "mq9-priority": "critical", "mq9-tags": "x,y" })).toEqual({
      error: "",
      msg_id: 2,
    });
    await send(viaA, "k-old", { "mq9-key": "status" });
    await send(viaB, "k-new", { "mq9-key": "status" });
    expect(await send(viaB, "later", { "mq9-delay": "1" })).toEqual({ error: "", msg_id: -1 });
    const all = await viaB("$mq9.AI.MSG.FETCH.proto", { deliver: "earliest" });
    expect(payloads(all)).toEqual(["c2", "u1", "n0", "k-new"]);
    expect(payloads(await viaA("$mq9.AI.MSG.QUERY.proto", { tags: ["y"] }))).toEqual(["c2"]);
    expect(payloads(await viaA("$mq9.AI.MSG.QUERY.proto", { key: "status" }))).toEqual(["k-new"]);
    expect(await viaA("$mq9.AI.MSG.DELETE.proto.0", "")).toEqual({ error: "", deleted: true });
    expect((await viaB("$mq9.AI.MSG.DELETE.proto.0", "")).error).toMatch(/not found/i);
    // The delayed message is promoted by whichever node's timer comes first, once.
    const later = await eventually(async () => {
      const reply = await viaB("$mq9.AI.MSG.QUERY.proto", {});
      return payloads(reply).includes("later") ? reply : undefined;
    });
    expect(payloads(later).filter((p) => p === "later")).toHaveLength(1);
    expect((await viaA("$mq9.AI.MSG.SEND.nope", "x")).error).toMatch(/not found|does not exist/i);
    expect((await viaA("$mq9.AI.MAILBOX.CREATE", "{bad json")).error).not.toBe("");
    expect((await viaB("$mq9.AI.NO.SUCH", {})).error).not.toBe("");
  });

  it("rest — every node's /api lists, describes, peeks, purges and deletes the cluster's mailboxes", async () => {
    const api = (node: Mq9NodeProcess, path: string, init?: RequestInit) =>
      fetch(`http://127.0.0.1:${node.httpPort}/api/v1${path}`, init).then(async (res) => ({
        status: res.status,
        body: (await res.json()) as Record<string, unknown>,
      }));
    const post = (body?: unknown): RequestInit =>
      body === undefined
        ? { method: "POST" }
        : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    expect((await api(nodes.c, "/mailboxes", post({ name: "rest.box", ttl: 3600 }))).status).toBe(201);
    await viaA("$mq9.AI.MSG.SEND.rest.box", "n0");
    await viaB("$mq9.AI.MSG.SEND.rest.box", "c1", { headers: { "mq9-priority": "critical" } });
    await viaAny("$mq9.AI.MSG.SEND.rest.box", "n2");
    await viaA("$mq9.AI.MSG.SEND.rest.box", "later", { headers: { "mq9-delay": "3600" } });
    const claimed = await viaB("$mq9.AI.MSG.FETCH.rest.box", {
      group_name: "workers",
      deliver: "earliest",
      config: { num_msgs: 2, lease_ms: 60_000 },
    });
    expect(payloads(claimed)).toEqual(["c1", "n0"]);
    expect(await viaB("$mq9.AI.MSG.ACK.rest.box", { group_name: "workers", msg_id: 1 })).toEqual({
      error: "",
    });
    // Each node reads the shared database: the same answer wherever the request lands.
    for (const node of [nodes.a, nodes.b, nodes.c]) {
      const list = await api(node, "/mailboxes?search=rest.");
      expect(list.status).toBe(200);
      expect(list.body.mailboxes).toEqual([
        expect.objectContaining({
          mail_address: "rest.box",
          ttl: 3600,
          depth: { critical: 1, urgent: 0, normal: 2 },
          messages: 3,
          // The payloads and c1's NATS header block, as /metrics counts them.
          bytes: expect.any(Number),
          delayed: 1,
          groups: 1,
        }),
      ]);
      expect((list.body.mailboxes as { bytes: number }[])[0].bytes).toBeGreaterThan(6);
      const detail = await api(node, "/mailboxes/rest.box");
      expect(detail.status).toBe(200);
      // c1 is ACKed; n0 is leased; n2 was never handed out.
      expect(detail.body.groups).toEqual([expect.objectContaining({ name: "workers", lag: 2, leased: 1 })]);
      const peek = await api(node, "/mailboxes/rest.box/peek");
      expect(peek.status).toBe(200);
      expect(payloads(peek.body as Reply)).toEqual(["c1", "n0", "n2"]);
    }
    expect((await api(nodes.a, "/mailboxes/no.such")).status).toBe(404);
    expect((await api(nodes.b, "/mailboxes/no.such/purge", post())).status).toBe(404);
    const purged = await api(nodes.a, "/mailboxes/rest.box/purge", post());
    expect(purged).toEqual({ status: 200, body: { purged: 3 } });
    expect(payloads(await viaB("$mq9.AI.MSG.QUERY.rest.box", {}))).toEqual([]);
    expect((await api(nodes.c, "/mailboxes/rest.box")).body.mailbox).toMatchObject({
      messages: 0,
      groups: 1,
    });
    expect((await api(nodes.b, "/mailboxes/rest.box", { method: "DELETE" })).status).toBe(200);
    expect((await viaA("$mq9.AI.MSG.SEND.rest.box", "x")).error).toBe("mailbox rest.box does not exist");
    expect((await api(nodes.c, "/mailboxes/rest.box", { method: "DELETE" })).status).toBe(404);
    expect((await api(nodes.a, "/mailboxes?search=rest.")).body.mailboxes).toEqual([]);
    // A node's clients are nats-server's: the connections list says where to look.
    expect(await api(nodes.b, "/connections")).toEqual({
      status: 200,
      body: { total: 0, connections: [], note: expect.stringContaining("/connz") },
    });
  });

  /** Requests of `op` each node has answered so far. */
  const counts = async (op: string) =>
    Object.fromEntries(
      await Promise.all(Object.entries(nodes).map(async ([id, n]) => [id, await answered(n, op)])),
    );
  const servedBy = (before: Record<string, number>, after: Record<string, number>) =>
    Object.keys(after).filter((id) => after[id] > before[id]);

  it("roster — every node lists every node, its nats-server and HTTP port, and who runs expiry", async () => {
    const everyone = ["a", "b", "c"].map((id) => nodes[id]);
    const views = await eventually(
      async () => {
        const all = await Promise.all(everyone.map(roster));
        const settled = all.every(
          (view) =>
            view.nodes.length === 3 &&
            view.nodes.every((m) => m.state === "up") &&
            view.nodes.filter((m) => m.duties.includes("expiry")).length === 1,
        );
        return settled ? all : undefined;
      },
      20_000,
      "every roster to list three nodes up, one of them running expiry",
    );
    const cluster = views[0].cluster;
    for (const [i, view] of views.entries()) {
      const self = everyone[i];
      expect(view).toMatchObject({ clustered: true, cluster, node: self.nodeId });
      // This node first, then the others by id.
      expect(view.nodes.map((m) => [m.node, m.self])).toEqual([
        [self.nodeId, true],
        ...["a", "b", "c"].filter((id) => id !== self.nodeId).map((id) => [id, false]),
      ]);
      for (const member of view.nodes) {
        const server = ["a", "b", "c"].indexOf(member.node);
        expect(member.http_port).toBe(nodes[member.node].httpPort);
        expect(member.http_url).toBe(`http://127.0.0.1:${nodes[member.node].httpPort}`);
        expect(member.nats_server).toBe(new URL(nats.urls[server]).host);
      }
    }
    // Each node names the same holder of the cluster's expiry work.
    const holders = views.map((view) => view.nodes.find((m) => m.duties.includes("expiry"))?.node);
    expect(new Set(holders).size).toBe(1);
    // News that is not JSON is ignored; a node's news lists it until it leaves.
    conns[0].publish("_mq9.cluster.presence", "not json");
    announce("z", cluster);
    await eventually(async () => (await roster(nodes.a)).nodes.some((m) => m.node === "z"));
    expect((await roster(nodes.a)).nodes.map((m) => m.node)).toEqual(["a", "b", "c", "z"]);
    announce("z", cluster, { leaving: true });
    await eventually(async () => (await roster(nodes.a)).nodes.length === 3, 5_000, "z to leave");
    const health = await fetch(`http://127.0.0.1:${nodes.b.httpPort}/healthz`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as Record<string, unknown>).nodes).toEqual({ up: 3, missing: 0, down: 0 });
    const metrics = await (await fetch(`http://127.0.0.1:${nodes.c.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^mq9_cluster_nodes\{state="up"\} 3$/m);
    // Every node reports each duty, 1 on the node that runs it: the cluster's sum is 1.
    const expiryDuty = await Promise.all(
      everyone.map(async (node) => {
        const text = await (await fetch(`http://127.0.0.1:${node.httpPort}/metrics`)).text();
        return Number(/^mq9_cluster_duty\{duty="expiry"\} (\d)$/m.exec(text)?.[1]);
      }),
    );
    expect(expiryDuty.sort()).toEqual([0, 0, 1]);
    // mq9 cluster status: from a node's HTTP server; a nats-server cannot tell the CLI where that is.
    const status = await runCli(["cluster", "status", "--http", `http://127.0.0.1:${nodes.b.httpPort}`]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^b \(this one\) +up +/m);
    expect(status.stdout).toMatch(/^cluster \S+: 3 nodes up, 0 missing, 0 down, as node b hears them$/m);
    const viaNats = await runCli(["cluster", "status", "--server", nats.urls[0]]);
    expect(viaNats.code).toBe(3);
    expect(viaNats.stderr).toMatch(
      /a cluster's nats-servers never name one: give a node's HTTP server with --http/,
    );
  });

  it("roster — a node attaches to the first nats-server of its --nats list, as listed", async () => {
    // Each list names every server, rotated: were the order shuffled, three nodes would all
    // land where listed only one time in 27.
    const listed = ["d", "e", "f"].map((nodeId, i) => ({
      nodeId,
      nats: [...nats.urls.slice(i), ...nats.urls.slice(0, i)],
    }));
    const extra = await Promise.all(listed.map((node) => startNode({ ...node, postgres: pg.url })));
    try {
      const view = await eventually(
        async () => {
          const now = await roster(nodes.a);
          return now.nodes.filter((m) => ["d", "e", "f"].includes(m.node)).length === 3 ? now : undefined;
        },
        20_000,
        "nodes d, e and f in a's roster",
      );
      for (const { nodeId, nats: urls } of listed) {
        expect(view.nodes.find((m) => m.node === nodeId)?.nats_server).toBe(new URL(urls[0]).host);
      }
    } finally {
      await Promise.all(extra.map((node) => node.stop()));
    }
    await eventually(async () => (await roster(nodes.a)).nodes.length === 3, 10_000, "d, e and f to leave");
  });

  it("roster — a node of another mq9 cluster on the account turns every /healthz to 503 while it is heard", async () => {
    // Two clusters starting in the same moment miss each other's roll call, not each other's news.
    announce("intruder", "another-cluster");
    const health = async (node: Mq9NodeProcess) => {
      const res = await fetch(`http://127.0.0.1:${node.httpPort}/healthz`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    for (const node of [nodes.a, nodes.b, nodes.c]) {
      const refused = await eventually(
        async () => {
          const h = await health(node);
          return h.status === 503 ? h.body : undefined;
        },
        5_000,
        `node ${node.nodeId} to answer 503`,
      );
      expect(refused.other_clusters).toEqual([{ node: "intruder", cluster: "another-cluster" }]);
      expect(node.output()).toMatch(
        /node intruder of another mq9 cluster \(another database or schema\) serves on this NATS account/,
      );
    }
    expect((await roster(nodes.a)).nodes.map((m) => m.node)).toEqual(["a", "b", "c"]);
    // Silent for three presence intervals, it no longer counts.
    await eventually(
      async () => (await health(nodes.b)).status === 200,
      20_000,
      "node b to be healthy again",
    );
  });

  it.skipIf(chromiumMissing() !== undefined)(
    "dashboard — every node's overview lists the nodes, their servers and who runs expiry",
    async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.context.newPage();
        await page.goto(`http://127.0.0.1:${nodes.c.httpPort}/`);
        const table = page.locator('[data-testid="cluster-nodes"]');
        await table.waitFor({ timeout: 20_000 });
        await page
          .locator('[data-testid="cluster-nodes"] tr[data-state="up"]')
          .nth(2)
          .waitFor({ timeout: 20_000 });
        const rows = table.locator("tbody tr");
        expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-node")))).toEqual([
          "c",
          "a",
          "b",
        ]);
        expect(await rows.first().textContent()).toContain("(this one)");
        expect(await rows.first().textContent()).toContain(new URL(nats.urls[2]).host);
        await table
          .locator('td[data-col="duties"]', { hasText: "expiry" })
          .first()
          .waitFor({ timeout: 20_000 });
        const duties = await table.locator('td[data-col="duties"]').allTextContents();
        expect(duties.filter((d) => d.split(", ").includes("expiry"))).toHaveLength(1);
        // Each node's port links to its own dashboard.
        const links = await table
          .locator("tbody a")
          .evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
        expect(links).toEqual(["c", "a", "b"].map((id) => `http://127.0.0.1:${nodes[id].httpPort}/`));
      } finally {
        await browser.close();
      }
    },
  );

  it("fetch — a long-poll on one node wakes on a SEND stored through another", async () => {
    await viaA("$mq9.AI.MAILBOX.CREATE", { name: "wake" });
    const maxWaitMs = 4_000;
    // NATS picks the queue-group member per request: repeat until the FETCH and the SEND went to
    // different nodes (two in three tries do), checking every time that the wake came at once.
    let crossNode = 0;
    for (let trial = 0; trial < 12 && crossNode < 2; trial++) {
      const fetchesBefore = await counts("msg.fetch");
      const sendsBefore = await counts("msg.send");
      const started = Date.now();
      const poll = viaA("$mq9.AI.MSG.FETCH.wake", { group_name: "g", config: { max_wait_ms: maxWaitMs } });
      await new Promise((r) => setTimeout(r, 300));
      expect((await viaB("$mq9.AI.MSG.SEND.wake", `ping${trial}`)).msg_id).toBe(trial);
      const reply = await poll;
      // Woken by the announcement, not by its own deadline (which would also find the message).
      expect(Date.now() - started).toBeLessThan(maxWaitMs);
      expect(payloads(reply)).toEqual([`ping${trial}`]);
      await viaA("$mq9.AI.MSG.ACK.wake", { group_name: "g", msg_id: trial });
      const fetchedOn = servedBy(fetchesBefore, await counts("msg.fetch"));
      const sentOn = servedBy(sendsBefore, await counts("msg.send"));
      expect(fetchedOn).toHaveLength(1);
      expect(sentOn).toHaveLength(1);
      if (fetchedOn[0] !== sentOn[0]) crossNode++;
    }
    expect(crossNode).toBe(2);
  });

  it("fetch — a long-poll whose client's socket was cut leaves no lease behind when a message comes", async () => {
    const logged = () => Object.values(nodes).some((n) => n.output().includes("gave its leases back"));
    // NATS may not have told every server of the cut before the SEND (then the reply seems to
    // go somewhere and the lease just runs out): try again with a fresh mailbox, a few times.
    for (let trial = 0; trial < 4 && !logged(); trial++) {
      const box = `cut${trial}`;
      await viaA(`$mq9.AI.MAILBOX.CREATE`, { name: box });
      const proxy = await tcpProxy(nats.servers[0].port);
      const doomed = await connect({
        servers: proxy.url,
        name: `doomed-${trial}`,
        // It must not come back by itself (it would, through the servers the cluster told it of).
        reconnect: false,
        ignoreClusterUpdates: true,
      });
      const abandoned = doomed
        .request(
          `$mq9.AI.MSG.FETCH.${box}`,
          JSON.stringify({
            group_name: "g",
            deliver: "earliest",
            config: { max_wait_ms: 4_000, lease_ms: 120_000 },
          }),
          { timeout: 10_000 },
        )
        .catch(() => undefined);
      await doomed.flush();
      const inbox = await eventually(async () => {
        const subs = await knownSubjects(nats.servers[0].monitorPort, `doomed-${trial}`);
        return subs.find((s) => s.startsWith("_INBOX."));
      });
      // Give the node the time to start waiting, then pull the cable.
      await new Promise((r) => setTimeout(r, 300));
      proxy.cut();
      await abandoned;
      await eventually(async () => {
        const known = await Promise.all(nats.servers.map((s) => knownSubjects(s.monitorPort)));
        return known.every((subs) => !subs.includes(inbox));
      });
      expect((await viaB(`$mq9.AI.MSG.SEND.${box}`, "for-the-living")).msg_id).toBe(0);
      try {
        await eventually(async () => logged(), 6_000, "the dead FETCH to give its lease back");
      } catch {
        continue;
      }
      // Long before the dead requester's 120 s lease would run out, a live member gets the message.
      const live = await viaAny(`$mq9.AI.MSG.FETCH.${box}`, {
        group_name: "g",
        config: { num_msgs: 10, max_wait_ms: 0 },
      });
      expect(payloads(live)).toEqual(["for-the-living"]);
    }
    expect(logged()).toBe(true);
  });

  it("groups — competing consumers across nodes never share a lease; independent groups get everything", async () => {
    await viaAny("$mq9.AI.MAILBOX.CREATE", { name: "work" });
    const total = 300;
    for (let i = 0; i < total; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => viaAny("$mq9.AI.MSG.SEND.work", `w${i + j}`)));
    }
    const consumers = [viaA, viaB, viaAny, viaA, viaB, viaAny];
    const fetchesBefore = await counts("msg.fetch");
    const seen: number[] = [];
    await Promise.all(
      consumers.map(async (via) => {
        let empty = 0;
        while (empty < 2) {
          const reply = await via("$mq9.AI.MSG.FETCH.work", {
            group_name: "workers",
            deliver: "earliest",
            config: { num_msgs: 10, max_wait_ms: 200 },
          });
          const got = ids(reply);
          if (got.length === 0) {
            empty++;
            continue;
          }
          empty = 0;
          seen.push(...got);
          expect(
            await via("$mq9.AI.MSG.ACK.work", { group_name: "workers", msg_id: got[got.length - 1] }),
          ).toEqual({
            error: "",
          });
        }
      }),
    );
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    // The group's claims really were spread over the nodes.
    expect(servedBy(fetchesBefore, await counts("msg.fetch")).length).toBeGreaterThanOrEqual(2);
    for (const group of ["audit-1", "audit-2"]) {
      const got: number[] = [];
      for (;;) {
        const reply = await viaAny("$mq9.AI.MSG.FETCH.work", {
          group_name: group,
          deliver: "earliest",
          config: { num_msgs: 100, max_wait_ms: 0 },
        });
        if (ids(reply).length === 0) break;
        got.push(...ids(reply));
        await viaAny("$mq9.AI.MSG.ACK.work", { group_name: group, msg_id: got[got.length - 1] });
      }
      expect(got.sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
    }
  });

  it("registry — a REGISTER through one node is discovered through every node; TTL expiry happens once", async () => {
    const names = (reply: Reply) => ((reply.agents ?? []) as { name: string }[]).map((a) => a.name);
    const discoverBefore = await counts("agent.discover");
    expect(
      await viaA("$mq9.AI.AGENT.REGISTER", {
        name: "cluster-translator",
        mailbox: "translator.inbox",
        payload: "translates cluster documents",
        tags: ["language"],
      }),
    ).toEqual({ error: "" });
    await eventually(
      async () => names(await viaB("$mq9.AI.AGENT.DISCOVER", { text: "translates" })).length === 1,
    );
    // Every node answers over the whole registry: twelve DISCOVERs spread over the nodes all find it.
    await eventually(
      async () => {
        const replies = await Promise.all(
          Array.from({ length: 12 }, () => viaAny("$mq9.AI.AGENT.DISCOVER", { tags: ["language"] })),
        );
        return replies.every((r) => names(r).includes("cluster-translator"));
      },
      10_000,
      "every node to know the registration",
    );
    expect(servedBy(discoverBefore, await counts("agent.discover")).length).toBeGreaterThanOrEqual(2);

    await viaB("$mq9.AI.AGENT.REGISTER", {
      name: "short-lived",
      mailbox: "short.inbox",
      payload: "gone soon",
      ttl: 1,
    });
    await eventually(
      async () => {
        const replies = await Promise.all(
          Array.from({ length: 6 }, () => viaAny("$mq9.AI.AGENT.DISCOVER", {})),
        );
        return replies.every((r) => !names(r).includes("short-lived"));
      },
      20_000,
      "the expired registration to vanish everywhere",
    );
    await eventually(
      async () =>
        (await pg.query("SELECT count(*) FROM mq9.registry_removals WHERE mailbox = 'short.inbox'")) === "1",
      20_000,
      "the purge",
    );
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await pg.query("SELECT count(*) FROM mq9.registry_removals WHERE mailbox = 'short.inbox'")).toBe(
      "1",
    );
  });

  it("orchestrator — runs on one node at a time; when that node dies another takes it over", async () => {
    const withOrchestrator = ["--orchestrator", "on"];
    const [o1, o2] = await Promise.all(
      ["o1", "o2"].map((nodeId, i) =>
        startNode({ nodeId, nats: [nats.urls[i]], postgres: pg.url, args: withOrchestrator }),
      ),
    );
    const tasksStatus = async (node: Mq9NodeProcess) =>
      (await fetch(`http://127.0.0.1:${node.httpPort}/api/tasks`).catch(() => undefined))?.status;
    const leaders = async () => {
      const statuses = await Promise.all([o1, o2].map(tasksStatus));
      return statuses.filter((s) => s === 200).length;
    };
    try {
      await eventually(async () => (await leaders()) === 1, 60_000, "one orchestrator to start");
      // It stays one: the other node keeps trying for the lock and does not get it.
      await new Promise((r) => setTimeout(r, 4_500));
      expect(await leaders()).toBe(1);
      const [leader, follower] = (await tasksStatus(o1)) === 200 ? [o1, o2] : [o2, o1];
      expect(await tasksStatus(follower)).toBe(503);
      // Every node's roster names the node that runs the orchestrator.
      const runner = async () =>
        (await roster(nodes.b)).nodes
          .filter((m) => m.state === "up" && m.duties.includes("orchestrator"))
          .map((m) => m.node)
          .join();
      await eventually(
        async () => (await runner()) === leader.nodeId,
        10_000,
        "b's roster to name the leader",
      );
      await leader.kill("SIGKILL");
      await eventually(
        async () => (await tasksStatus(follower)) === 200,
        60_000,
        "the other node to take over",
      );
      await eventually(
        async () => (await runner()) === follower.nodeId,
        10_000,
        "b's roster to name the new one",
      );
    } finally {
      await Promise.all([o1.stop(), o2.stop()]);
    }
  });

  it("node death — kill -9 of a node under 64 SENDs in flight loses nothing acked; its leases come back", async () => {
    await viaA("$mq9.AI.MAILBOX.CREATE", { name: "leases" });
    for (const body of ["l0", "l1", "l2", "l3", "l4"]) await viaA("$mq9.AI.MSG.SEND.leases", body);
    const leased = await viaA("$mq9.AI.MSG.FETCH.leases", {
      group_name: "g",
      deliver: "earliest",
      config: { num_msgs: 5, lease_ms: 3_000, max_wait_ms: 0 },
    });
    expect(payloads(leased)).toEqual(["l0", "l1", "l2", "l3", "l4"]);
    expect(await viaA("$mq9.AI.MSG.ACK.leases", { group_name: "g", msg_id: 1 })).toEqual({ error: "" });

    await viaA("$mq9.AI.MAILBOX.CREATE", { name: "durable" });
    let killed: Promise<void> | undefined;
    const load = await sendLoad(viaA, "durable", 1_500, 64, (acked) => {
      if (acked >= 300 && !killed) killed = nodes.a.kill("SIGKILL");
    });
    await killed;
    expect(killed).toBeDefined();
    // At most the SENDs in flight at the kill went unanswered; the survivors took the rest.
    expect(load.failed.length).toBeLessThanOrEqual(64);
    expect(load.acked.size).toBeGreaterThanOrEqual(1_500 - 64);
    const stored = await everything(viaB, "durable");
    expectStoredOnce(load.acked, stored);
    // Whatever was stored of the unanswered ones is there once too (checked above); the rest is not there.
    expect(stored.length).toBeLessThanOrEqual(1_500);

    // a's leases on l2..l4 run out and go to a member on another node; l0 and l1 were ACKed.
    const back = await eventually(async () => {
      const reply = await viaB("$mq9.AI.MSG.FETCH.leases", {
        group_name: "g",
        config: { num_msgs: 10, max_wait_ms: 500 },
      });
      return ids(reply).length > 0 ? reply : undefined;
    });
    expect(payloads(back)).toEqual(["l2", "l3", "l4"]);

    // The other nodes report a missing once it has been silent for three presence intervals…
    const killedInstance = await eventually(
      async () => {
        const a = (await roster(nodes.b)).nodes.find((m) => m.node === "a");
        return a?.state === "missing" ? a.instance : undefined;
      },
      20_000,
      "node b to report a missing",
    );
    await eventually(
      async () =>
        /node a has not been heard for \d+ s: it died or lost its NATS connection/.test(nodes.b.output()),
      5_000,
      "node b to log that a is missing",
    );
    // …and a restarted a takes its place in their rosters.
    await startNamed("a", 0);
    const restarted = await eventually(
      async () => {
        const named = (await roster(nodes.c)).nodes.filter((m) => m.node === "a");
        return named.length === 1 && named[0].state === "up" ? named[0] : undefined;
      },
      20_000,
      "node c to list the restarted a alone",
    );
    expect(restarted.instance).not.toBe(killedInstance);
    expect(nodes.c.output()).toMatch(/node a restarted/);
  });

  it("rolling restart — SIGTERM of a node under 64 SENDs and 8 long-polls in flight: every request is answered", async () => {
    await viaA("$mq9.AI.MAILBOX.CREATE", { name: "rolling" });
    // Long-polls waiting on an empty mailbox, some of them on b when it is told to stop.
    await viaA("$mq9.AI.MAILBOX.CREATE", { name: "rolling.idle" });
    const polls = Array.from({ length: 8 }, (_, i) =>
      viaAny("$mq9.AI.MSG.FETCH.rolling.idle", {
        group_name: `idle${i}`,
        config: { max_wait_ms: 4_000 },
      }).catch((err: Error) => ({ error: `(client) ${err.message}` })),
    );
    let stopped: Promise<void> | undefined;
    const load = await sendLoad(viaA, "rolling", 1_500, 64, (acked) => {
      if (acked >= 300 && !stopped) stopped = nodes.b.stop();
    });
    await stopped;
    expect(stopped).toBeDefined();
    // A node that is told to stop leaves the queue group and answers what it holds: no client sees it.
    expect(load.errors).toEqual(new Map());
    expect(load.acked.size).toBe(1_500);
    expectStoredOnce(load.acked, await everything(viaA, "rolling"));
    // The long-polls b held were answered too (empty), not left to the clients' timeout.
    expect(await Promise.all(polls)).toEqual(polls.map(() => ({ error: "", messages: [] })));
    // b said it was leaving: the others dropped it at once instead of reporting it missing.
    await eventually(
      async () => !(await roster(nodes.a)).nodes.some((m) => m.node === "b"),
      20_000,
      "node a to drop b (a silent node would stay listed as missing, then down)",
    );
    expect(nodes.a.output()).toMatch(/node b left the cluster/);
    await startNamed("b", 1);
  });

  it("nats-server death — killing the server one node and some clients use, mid-load, loses nothing acked", async () => {
    await viaAny("$mq9.AI.MAILBOX.CREATE", { name: "routes" });
    const n3 = nats.servers[2];
    let killed: Promise<void> | undefined;
    const load = await sendLoad(viaAny, "routes", 1_000, 64, (acked) => {
      if (acked >= 200 && !killed) killed = n3.kill();
    });
    await killed;
    expect(load.acked.size).toBeGreaterThanOrEqual(1_000 - 64);
    expectStoredOnce(load.acked, await everything(viaAny, "routes"));
    n3.start();
    await nats.waitForRoutes();
    // Node c reconnects by itself and serves again.
    await eventually(
      async () => {
        const health = (await (await fetch(`http://127.0.0.1:${nodes.c.httpPort}/healthz`)).json()) as {
          nats: { connected: boolean };
        };
        return health.nats.connected;
      },
      30_000,
      "node c to reconnect",
    );
  });

  it("postgres down — requests fail with a clear error, the nodes recover by themselves, nothing acked is lost", async () => {
    await viaAny("$mq9.AI.MAILBOX.CREATE", { name: "outage" });
    const before = await sendLoad(viaAny, "outage", 100, 16);
    expect(before.failed).toEqual([]);
    await pg.pause();
    const during = await viaB("$mq9.AI.MSG.SEND.outage", "during");
    expect(during.error).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/mq9 is unavailable/);
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${nodes.b.httpPort}/healthz`)).status === 503,
    );
    await pg.start();
    const after = await eventually(
      async () => {
        const reply = await viaB("$mq9.AI.MSG.SEND.outage", "after");
        return reply.error === "" ? reply : undefined;
      },
      30_000,
      "SENDs to succeed again",
    );
    expect(typeof after.msg_id).toBe("number");
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${nodes.b.httpPort}/healthz`)).status === 200,
    );
    const stored = await everything(viaA, "outage");
    for (const [body, id] of before.acked) expect(stored.find((s) => s.body === body)?.id).toBe(id);
    expect(stored.map((s) => s.body)).not.toContain("during");
  });
});
