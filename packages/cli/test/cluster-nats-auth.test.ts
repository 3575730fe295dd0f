import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as mq9Connect } from "@mq9/client";
import {
  brokerKindMissing,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import { connect, credsAuthenticator, type NatsConnection } from "nats";
import {
  Algorithms,
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type KeyPair,
  type User,
} from "nats-jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMq9Node } from "../../../scripts/local-cluster/mq9-node.js";
import { expectAppsServe, WITH_ORCHESTRATOR } from "./cluster-apps.js";
import {
  answered,
  eventually,
  ids,
  LIGHT_NODE,
  type Mq9NodeProcess,
  mq9Client,
  payloads,
  type Reply,
  startNode,
} from "./cluster-harness.js";
import { REPO_ROOT } from "./doc-examples.js";

const missing = brokerKindMissing("cluster");

/** The nats-server permission block of docs/cluster.md, as printed there. */
function documentedPermissions(): string {
  const page = readFileSync(join(REPO_ROOT, "docs/cluster.md"), "utf8");
  const block = /```text\n(# nats-server\.conf: mq9 permissions\n[\s\S]*?)```/.exec(page);
  if (!block) throw new Error("docs/cluster.md has no '# nats-server.conf: mq9 permissions' block");
  return block[1];
}

/** The accounts block of docs/cluster.md ("One NATS account per user"), as printed there. */
function documentedAccounts(): string {
  const page = readFileSync(join(REPO_ROOT, "docs/cluster.md"), "utf8");
  const block = /```text\n(# nats-server\.conf, on every server of the cluster[\s\S]*?)```/.exec(page);
  if (!block) throw new Error("docs/cluster.md has no '# nats-server.conf, on every server' block");
  return block[1];
}

/** The permissions the node's minimal set and an agent's, as a user JWT carries them. */
const NODE_WITH_APPS: Partial<User> = {
  sub: { allow: ["$mq9.AI.>", "_mq9.cluster.>", "_INBOX.>"], deny: [] },
  pub: { allow: ["$mq9.AI.>", "_mq9.cluster.>"], deny: [] },
  resp: { max: 1, ttl: 0 },
};

const PERMISSION_VIOLATION = /permissions[ _]violation/i;

describe.skipIf(missing !== undefined)(
  `cluster on an authorizing NATS${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let pg: PrivatePostgres;
    const stops: (() => Promise<void>)[] = [];
    const nodes: Mq9NodeProcess[] = [];
    const conns: NatsConnection[] = [];
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "mq9-nats-auth-"));
      pg = await startPrivatePostgres();
    }, 240_000);

    afterAll(async () => {
      await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
      await Promise.all(nodes.map((node) => node.stop()));
      await Promise.all(stops.map((stop) => stop()));
      await pg?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    const startNats = async (size: number, config: string) => {
      const nats = await startNatsServers({ size, config });
      stops.push(() => nats.stop());
      return nats;
    };
    const startOn = async (nodeId: string, servers: string[], schema: string, flags: string[]) => {
      const node = await startNode({
        nodeId,
        nats: servers,
        postgres: pg.url,
        // These tests are about the NATS side; the HTTP API's auth is cluster-http-auth.test.ts's.
        args: ["--http-without-auth", "--postgres-schema", schema, ...flags],
      });
      nodes.push(node);
      return node;
    };
    const agent = async (servers: string[], user: string) => {
      const nc = await connect({
        servers,
        user,
        pass: "change-me",
        name: user,
        inboxPrefix: `_INBOX_${user}`,
      });
      conns.push(nc);
      return nc;
    };

    it("subject permissions — nodes under exactly docs/cluster.md's set serve the protocol; agents are held to their own", async () => {
      const nats = await startNats(2, documentedPermissions());
      const asNodeB = ["--nats-user", "mq9-b", "--nats-password", "change-me"];
      // Two nodes with the bare node set, one per server: every request goes to one of them.
      const [b1, b2] = await Promise.all([
        startOn("b1", [nats.urls[0]], "perm", asNodeB),
        startOn("b2", [nats.urls[1]], "perm", asNodeB),
      ]);
      const aliceNc = await agent([nats.urls[0]], "alice");
      const bobNc = await agent([nats.urls[1]], "bob");
      const alice = mq9Client(aliceNc);
      const bob = mq9Client(bobNc);

      // Every request of the protocol, each through both nodes (NATS spreads them).
      expect(await alice("$mq9.AI.MAILBOX.CREATE", { name: "alice.inbox", ttl: 3600 })).toEqual({
        error: "",
        mail_address: "alice.inbox",
      });
      expect(await bob("$mq9.AI.MAILBOX.CREATE", { name: "bob" })).toEqual({
        error: "",
        mail_address: "bob",
      });
      expect(await bob("$mq9.AI.MSG.SEND.alice.inbox", "n0")).toEqual({ error: "", msg_id: 0 });
      expect(
        await bob("$mq9.AI.MSG.SEND.alice.inbox", "c1", {
          headers: { "mq9-priority": "critical", "mq9-tags": "t" },
        }),
      ).toEqual({ error: "", msg_id: 1 });
      await bob("$mq9.AI.MSG.SEND.alice.inbox", "k-old", { headers: { "mq9-key": "state" } });
      await bob("$mq9.AI.MSG.SEND.alice.inbox", "k-new", { headers: { "mq9-key": "state" } });
      expect(await bob("$mq9.AI.MSG.SEND.alice.inbox", "later", { headers: { "mq9-delay": "1" } })).toEqual({
        error: "",
        msg_id: -1,
      });
      expect(payloads(await alice("$mq9.AI.MSG.FETCH.alice.inbox", { deliver: "earliest" }))).toEqual([
        "c1",
        "n0",
        "k-new",
      ]);
      const claimed = await alice("$mq9.AI.MSG.FETCH.alice.inbox", {
        group_name: "g",
        deliver: "earliest",
        config: { num_msgs: 2 },
      });
      expect(payloads(claimed)).toEqual(["c1", "n0"]);
      expect(await alice("$mq9.AI.MSG.ACK.alice.inbox", { group_name: "g", msg_id: 0 })).toEqual({
        error: "",
      });
      expect(payloads(await alice("$mq9.AI.MSG.QUERY.alice.inbox", { tags: ["t"] }))).toEqual(["c1"]);
      expect(await alice("$mq9.AI.MSG.DELETE.alice.inbox.1", "")).toEqual({ error: "", deleted: true });
      await eventually(async () =>
        payloads(await alice("$mq9.AI.MSG.QUERY.alice.inbox", {})).includes("later"),
      );
      expect((await bob("$mq9.AI.MSG.SEND.nope", "x")).error).toMatch(/does not exist/);
      expect(
        await alice("$mq9.AI.AGENT.REGISTER", {
          name: "alice",
          mailbox: "alice.inbox",
          payload: "reads her own mail",
          tags: ["people"],
        }),
      ).toEqual({ error: "" });
      expect(await alice("$mq9.AI.AGENT.REPORT", { name: "alice", mailbox: "alice.inbox" })).toMatchObject({
        error: "",
      });
      await eventually(async () => {
        const found = (await bob("$mq9.AI.AGENT.DISCOVER", { tags: ["people"] })).agents as unknown[];
        return found?.length === 1;
      });
      expect(await alice("$mq9.AI.AGENT.UNREGISTER", { mailbox: "alice.inbox" })).toEqual({ error: "" });

      // A long-poll is answered when a SEND arrives (the wake-up crosses nodes under the set too).
      // The group exists first, so a SEND that beats a poll on a loaded machine is still its answer.
      await alice("$mq9.AI.MSG.FETCH.alice.inbox", { group_name: "wake", deliver: "latest" });
      for (let trial = 0; trial < 4; trial++) {
        const poll = alice("$mq9.AI.MSG.FETCH.alice.inbox", {
          group_name: "wake",
          deliver: "latest",
          config: { max_wait_ms: 4_000 },
        });
        await new Promise((r) => setTimeout(r, 300));
        const sent = await bob("$mq9.AI.MSG.SEND.alice.inbox", `ping${trial}`);
        expect(ids(await poll)).toEqual([sent.msg_id]);
      }
      for (const node of [b1, b2]) expect(await answered(node, "msg.send"), node.nodeId).toBeGreaterThan(0);

      // Bob may send to Alice, but not read her mailbox: nats-server refuses the request itself.
      await expect(
        bob("$mq9.AI.MSG.FETCH.alice.inbox", { group_name: "g", deliver: "earliest" }),
      ).rejects.toThrow(/Permissions Violation for Publish to "\$mq9\.AI\.MSG\.FETCH\.alice\.inbox"/);
      await expect(bob("$mq9.AI.MSG.DELETE.alice.inbox.0", "")).rejects.toThrow(/Permissions Violation/);
      // Nor pose as a node: joining the queue group is refused.
      const stolen: string[] = [];
      let refusal: Error | undefined;
      bobNc.subscribe("$mq9.AI.>", {
        queue: "mq9",
        callback: (err, msg) => {
          if (err) refusal = err;
          else stolen.push(msg.subject);
        },
      });
      await eventually(async () => refusal, 10_000, "the subscription's refusal");
      expect(refusal?.message).toMatch(/Permissions Violation for Subscription to "\$mq9\.AI\.>"/);
      // Nor read Alice's replies: her inbox prefix is hers alone, and the common one nobody's.
      for (const inboxes of ["_INBOX_alice.>", "_INBOX.>"]) {
        let refused: Error | undefined;
        bobNc.subscribe(inboxes, { callback: (err) => (refused ??= err ?? undefined) });
        await eventually(async () => refused, 10_000, `the refusal of ${inboxes}`);
        expect(refused?.message).toMatch(/Permissions Violation for Subscription/);
      }
      // The mq9 client with her prefix, as docs/cluster.md shows, gets its replies.
      const aliceClient = await mq9Connect(nats.urls, {
        user: "alice",
        password: "change-me",
        inboxPrefix: "_INBOX_alice",
      });
      try {
        expect((await aliceClient.query("alice.inbox")).length).toBeGreaterThan(0);
      } finally {
        await aliceClient.close();
      }
      for (let i = 0; i < 6; i++) await alice("$mq9.AI.MSG.QUERY.alice.inbox", {});
      expect(stolen).toEqual([]);
      // Nothing reached a node: group g still holds only what Alice left there.
      const left = await alice("$mq9.AI.MSG.FETCH.alice.inbox", {
        group_name: "g",
        deliver: "earliest",
        config: { num_msgs: 10, max_wait_ms: 0 },
      });
      // (Bob's FETCH in group g, had it reached a node, would have leased k-new and the rest.)
      expect(payloads(left).sort()).toEqual(["k-new", "later", "ping0", "ping1", "ping2", "ping3"]);

      // A node under an agent's user is refused the requests: it says so, and /healthz is not 200.
      const impostor = startMq9Node({
        nodeId: "impostor",
        nats: [nats.urls[0]],
        postgres: pg.url,
        startTimeoutMs: 15_000,
        args: [
          ...LIGHT_NODE,
          "--http-without-auth",
          "--postgres-schema",
          "perm",
          "--nats-user",
          "alice",
          "--nats-password",
          "change-me",
        ],
      });
      await expect(impostor).rejects.toThrow(/was not healthy in time/);
      await expect(impostor).rejects.toThrow(
        /the cluster refused this node's subscription to \$mq9\.AI\.> \('Permissions Violation.*this node receives no request/,
      );

      // A node with the apps' set: MCP, the gateway and the orchestrator work through it.
      const a = await startOn("a", nats.urls, "perm", [
        ...WITH_ORCHESTRATOR,
        "--nats-user",
        "mq9-a",
        "--nats-password",
        "change-me",
      ]);
      await expectAppsServe(
        a,
        { servers: nats.urls, options: { user: "mq9-a", password: "change-me" } },
        "apps.box",
      );
      // No node was refused anything along the way.
      for (const node of [b1, b2, a]) expect(node.output(), node.nodeId).not.toMatch(PERMISSION_VIOLATION);
      // Open on purpose (--http-without-auth): the API answers without a token, and the log says so.
      expect((await fetch(`http://127.0.0.1:${b1.httpPort}/api/v1/mailboxes`)).status).toBe(200);
      expect(b1.output()).toContain("--http-without-auth: the HTTP API of this node (http://127.0.0.1:");
    }, 240_000);

    it("one account per user — a node's MCP, A2A gateway and orchestrator serve an agent of a user's account", async () => {
      const nats = await startNats(2, documentedAccounts());
      const node = await startOn("acc", nats.urls, "accounts", [
        ...WITH_ORCHESTRATOR,
        "--nats-user",
        "mq9-node",
        "--nats-password",
        "change-me",
        "--cluster-identity",
        "account-prefix",
        "--cluster-admins",
        "ops",
      ]);
      // The agent registers and reads its mailbox as alice; the apps act as mq9-internal, an admin.
      await expectAppsServe(
        node,
        { servers: nats.urls, options: { user: "alice", password: "change-me" } },
        "apps.acc",
      );
      expect(node.output()).toContain("the requester is the account prefix of each request");
      expect(node.output()).not.toMatch(PERMISSION_VIOLATION);
    }, 240_000);

    it("operator mode — a node and agents connect with .creds files; a user of an unknown account is refused", async () => {
      const operator = createOperator() as KeyPair;
      const account = createAccount() as KeyPair;
      const stranger = createAccount() as KeyPair;
      const options = { algorithm: Algorithms.v2 };
      const operatorJwt = await encodeOperator("mq9-test", operator, {}, options);
      // No limits (a fresh account's are zero: no connection would be let in).
      const unlimited = {
        subs: -1,
        conn: -1,
        leaf: -1,
        imports: -1,
        exports: -1,
        data: -1,
        payload: -1,
        wildcards: true,
      };
      const accountJwt = await encodeAccount(
        "MQ9",
        account,
        { limits: unlimited } as Parameters<typeof encodeAccount>[2],
        { ...options, signer: operator },
      );
      const credsFile = async (name: string, issuer: KeyPair, permissions: Partial<User> = {}) => {
        const user = createUser() as KeyPair;
        const jwt = await encodeUser(name, user, issuer, permissions, options);
        const file = join(dir, `${name}.creds`);
        writeFileSync(file, fmtCreds(jwt, user));
        return file;
      };
      const nats = await startNats(
        2,
        `operator: ${operatorJwt}
resolver: MEMORY
resolver_preload: {
  ${account.getPublicKey()}: ${accountJwt}
}
`,
      );
      const nodeCreds = await credsFile("mq9-node", account, NODE_WITH_APPS);
      const agentCreds = await credsFile("agent", account);
      const node = await startOn("jwt", nats.urls, "jwt", [...WITH_ORCHESTRATOR, "--nats-creds", nodeCreds]);
      const health = (await (await fetch(`http://127.0.0.1:${node.httpPort}/healthz`)).json()) as Reply;
      expect(health).toMatchObject({ ok: true, nats: { connected: true } });

      // A plain nats client with its .creds: the whole round trip.
      const nc = await connect({
        servers: nats.urls,
        authenticator: credsAuthenticator(readFileSync(agentCreds)),
      });
      conns.push(nc);
      const via = mq9Client(nc);
      expect(await via("$mq9.AI.MAILBOX.CREATE", { name: "jwt.box" })).toEqual({
        error: "",
        mail_address: "jwt.box",
      });
      expect(await via("$mq9.AI.MSG.SEND.jwt.box", "signed")).toEqual({ error: "", msg_id: 0 });
      const got = await via("$mq9.AI.MSG.FETCH.jwt.box", { group_name: "g", deliver: "earliest" });
      expect(payloads(got)).toEqual(["signed"]);
      expect(await via("$mq9.AI.MSG.ACK.jwt.box", { group_name: "g", msg_id: 0 })).toEqual({ error: "" });

      // The node's apps connect with its .creds; an agent with the mq9 client's `creds` option.
      await expectAppsServe(
        node,
        { servers: nats.urls, options: { creds: readFileSync(agentCreds, "utf8") } },
        "jwt.mcp",
      );

      // Signed by an account the servers do not know: refused, and the start says why.
      const strangerCreds = await credsFile("stranger", stranger, NODE_WITH_APPS);
      const refused = startOn("stranger", nats.urls, "jwt", ["--nats-creds", strangerCreds]);
      await expect(refused).rejects.toThrow(/exited during start/);
      await expect(refused).rejects.toThrow(
        /cannot reach the NATS cluster at .*[Aa]uthorization [Vv]iolation/,
      );
    }, 240_000);

    it("operator mode, one account per user — the importing account's public key is the requester", async () => {
      const options = { algorithm: Algorithms.v2 };
      const operator = createOperator() as KeyPair;
      const [mq9, alice, bob, mallory] = [0, 1, 2, 3].map(() => createAccount() as KeyPair);
      const limits = {
        subs: -1,
        conn: -1,
        leaf: -1,
        imports: -1,
        exports: -1,
        data: -1,
        payload: -1,
        wildcards: true,
      };
      const signed = { ...options, signer: operator };
      type AccountClaims = Parameters<typeof encodeAccount>[2];
      // One export for every account: nats-server lets an account import it only with its own public
      // key in the first token (account_token_position 1).
      const exports = [{ name: "mq9", subject: "*.$mq9.AI.>", type: "service", account_token_position: 1 }];
      const importOf = (prefix: KeyPair) => ({
        name: "mq9",
        subject: `${prefix.getPublicKey()}.$mq9.AI.>`,
        account: mq9.getPublicKey(),
        type: "service",
        local_subject: "$mq9.AI.>",
      });
      const jwts = [
        [mq9, await encodeAccount("MQ9", mq9, { limits, exports } as unknown as AccountClaims, signed)],
        [
          alice,
          await encodeAccount(
            "alice",
            alice,
            { limits, imports: [importOf(alice)] } as unknown as AccountClaims,
            signed,
          ),
        ],
        [
          bob,
          await encodeAccount(
            "bob",
            bob,
            { limits, imports: [importOf(bob)] } as unknown as AccountClaims,
            signed,
          ),
        ],
        // Mallory's account imports alice's prefix: the servers do not honour it.
        [
          mallory,
          await encodeAccount(
            "mallory",
            mallory,
            { limits, imports: [importOf(alice)] } as unknown as AccountClaims,
            signed,
          ),
        ],
      ] as const;
      const nats = await startNats(
        2,
        `operator: ${await encodeOperator("mq9-test", operator, {}, options)}
resolver: MEMORY
resolver_preload: {
${jwts.map(([account, jwt]) => `  ${account.getPublicKey()}: ${jwt}`).join("\n")}
}
`,
      );
      const credsOf = async (name: string, account: KeyPair) => {
        const user = createUser() as KeyPair;
        const file = join(dir, `${name}.creds`);
        writeFileSync(file, fmtCreds(await encodeUser(name, user, account, {}, options), user));
        return file;
      };
      await startOn("acc-jwt", nats.urls, "accjwt", [
        "--nats-creds",
        await credsOf("acc-node", mq9),
        "--cluster-identity",
        "account-prefix",
      ]);
      const as = async (name: string, account: KeyPair) => {
        const nc = await connect({
          servers: nats.urls,
          authenticator: credsAuthenticator(readFileSync(await credsOf(name, account))),
        });
        conns.push(nc);
        return mq9Client(nc);
      };
      const [a, b, m] = [await as("alice", alice), await as("bob", bob), await as("mallory", mallory)];
      expect(await a("$mq9.AI.MAILBOX.CREATE", { name: "jwt.alice" })).toEqual({
        error: "",
        mail_address: "jwt.alice",
      });
      expect((await b("$mq9.AI.MSG.SEND.jwt.alice", "from bob")).error).toBe("");
      const denied = await b("$mq9.AI.MSG.FETCH.jwt.alice", { group_name: "g", deliver: "earliest" });
      expect(denied.error).toMatch(/^permission denied: mailbox jwt\.alice belongs to another user/);
      expect(
        payloads(await a("$mq9.AI.MSG.FETCH.jwt.alice", { group_name: "g", deliver: "earliest" })),
      ).toEqual(["from bob"]);
      // Mallory's import of alice's prefix reaches no node: nothing answers it.
      await expect(m("$mq9.AI.MSG.QUERY.jwt.alice", {}, { timeout: 1000 })).rejects.toThrow(
        /503|TIMEOUT|no responders/i,
      );
    }, 240_000);
  },
);
