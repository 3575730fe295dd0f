// A cluster as secure as one broker: two nodes behind routed nats-servers whose configuration
// gives the nodes an account of their own and each user one that imports the nodes' service
// under its own prefix (docs/cluster.md, "One NATS account per user"). The ownership suite one
// broker passes runs here too, plus what only a cluster has: the nodes' own subjects.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import {
  type NatsServers,
  natsServerMissing,
  postgresMissing,
  repoRoot,
  securedNatsConfig,
  startBrokerCluster,
  startNatsServers,
  usePrivatePostgres,
} from "@mq9/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountIdentity } from "../src/cluster/account-identity.js";
import { sleep, type TestBroker } from "./harness.js";
import { ownershipSuite } from "./ownership-suite.js";

// The users of docs/cluster.md's accounts block, which these nats-servers run as printed.
const NODE = { user: "mq9-node", password: "change-me" };
const USERS = ["alice", "bob", "ops"].map((name) => ({ account: name, user: name, password: "change-me" }));

/** The accounts block of docs/cluster.md ("One NATS account per user"), as printed there. */
function documentedAccounts(): string {
  const page = readFileSync(join(repoRoot, "docs/cluster.md"), "utf8");
  const block = /```text\n(# nats-server\.conf, on every server of the cluster[\s\S]*?)```/.exec(page);
  if (!block) throw new Error("docs/cluster.md has no '# nats-server.conf, on every server' block");
  return block[1];
}

const missing = postgresMissing() ?? natsServerMissing();

describe.skipIf(missing !== undefined)(
  `two cluster nodes, one NATS account per user${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();
    let nats: NatsServers;
    let t: TestBroker;
    let alice: NatsConnection;
    let bob: NatsConnection;
    let root: NatsConnection;
    let node: NatsConnection;

    beforeAll(async () => {
      nats = await startNatsServers({ size: 2, config: documentedAccounts() });
      const started = await startBrokerCluster(
        db.pg.url,
        nats.urls,
        { registry: { embedder: "none" } },
        { node: { ...NODE, identity: { kind: "account-prefix", admins: ["ops"] } } },
      );
      // Each user's connections alternate between the two nats-servers, so requests cross routes.
      alice = await started.nats({ user: "alice", pass: "change-me" });
      bob = await started.nats({ user: "bob", pass: "change-me" });
      root = await started.nats({ user: "ops", pass: "change-me" });
      node = await started.nats({ user: NODE.user, pass: NODE.password });
      t = Object.assign(started, { nc: alice });
    }, 120_000);
    afterAll(async () => {
      await t?.close();
      await nats?.stop();
    }, 60_000);

    ownershipSuite(() => ({ request: t.request, alice, bob, root }));

    it("a user cannot reach another user's prefix: no node takes it, nothing is made", async () => {
      const sneak = JSON.stringify({ name: "bob.sneaks" });
      // bob's own `>` (the first test's spy) is the only interest in its account: a timeout, not 503.
      await expect(bob.request("alice.$mq9.AI.MAILBOX.CREATE", sneak, { timeout: 1000 })).rejects.toThrow(
        /TIMEOUT|503/,
      );
      const info = await t.request(Subjects.mailboxInfo("bob.sneaks"), {}, { nc: root });
      expect(info.error).toMatch(/does not exist/);
    });

    it("presence news and wake-ups from a user's account never reach the nodes", async () => {
      const view = t.broker.cluster!.view()!;
      const news = (name: string, cluster: string) =>
        JSON.stringify({ node: name, instance: `${name}/1`, cluster, started_at: Date.now(), duties: [] });
      // A stranger's news would turn every node's /healthz to 503; a member's would enter the roster.
      bob.publish("_mq9.cluster.presence", news("forged", "another-cluster"));
      bob.publish("_mq9.cluster.presence", news("forged-member", view.cluster));
      bob.publish("_mq9.cluster.roll-call", news("forged-call", "another-cluster"));
      await bob.flush();
      // Positive control: the same news from the nodes' own account is heard.
      node.publish("_mq9.cluster.presence", news("probe", view.cluster));
      await node.flush();
      let heard: string[] = [];
      for (let i = 0; i < 50 && !heard.includes("probe"); i++) {
        await sleep(100);
        heard = t.broker.cluster!.view()!.nodes.map((n) => n.node);
      }
      expect(heard).toContain("probe");
      expect(heard).not.toContain("forged-member");
      for (const broker of t.brokers) {
        const health = broker.cluster!.health(undefined);
        expect(health.other_clusters).toBeUndefined();
        expect(health.ok).toBe(true);
      }
    });

    it("requests from the nodes' own account (their in-process apps) act as an admin", async () => {
      const made = await t.request<{ mail_address: string }>(
        Subjects.mailboxCreate,
        { name: "apps.box" },
        { nc: node },
      );
      expect(made.error).toBe("");
      expect((await t.request(Subjects.send("apps.box"), "for the apps", { nc: alice })).error).toBe("");
      expect((await t.request(Subjects.query("apps.box"), {}, { nc: alice })).error).toMatch(
        /^permission denied/,
      );
      expect((await t.request(Subjects.query("apps.box"), {}, { nc: node })).error).toBe("");
      expect((await t.request(Subjects.query("alice.private"), {}, { nc: node })).error).toBe("");
    });
  },
);

describe("account-prefix identity", () => {
  it("npm run cluster:up -- --secured writes the documented accounts block (its passwords aside)", () => {
    const generated = securedNatsConfig({ nodes: [NODE], users: USERS });
    const shape = (config: string) =>
      config
        .split("\n")
        .map((line) => line.replace(/#.*$/, "").trim())
        .filter((line) => line !== "");
    expect(shape(generated)).toEqual(shape(documentedAccounts()));
  });

  it("reads the requester from the prefix, the nodes' account as admin, and reserves its name", () => {
    const identity = new AccountIdentity({ kind: "account-prefix", admins: ["ops"] });
    expect(identity.subjects().map((s) => s.subject)).toEqual(["*.$mq9.AI.>", "$mq9.AI.>"]);
    expect(identity.identify("alice.$mq9.AI.MSG.FETCH.box", true)).toEqual({
      subject: "$mq9.AI.MSG.FETCH.box",
      principal: { name: "alice", admin: false, mailboxGrants: [] },
      imported: true,
    });
    expect(identity.identify("ops.$mq9.AI.MAILBOX.LIST", true).principal?.admin).toBe(true);
    expect(identity.identify("$mq9.AI.MAILBOX.LIST", false).principal).toEqual({
      name: "mq9-internal",
      admin: true,
      mailboxGrants: [],
    });
    expect(identity.identify("mq9-internal.$mq9.AI.MAILBOX.LIST", true).refusal).toMatch(
      /^permission denied: the NATS account prefix 'mq9-internal' is reserved/,
    );
    const none = new AccountIdentity(undefined);
    expect(none.isolates).toBe(false);
    expect(none.identify("$mq9.AI.MAILBOX.LIST", false).principal).toBeUndefined();
  });
});
