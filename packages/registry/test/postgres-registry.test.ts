import type { Principal } from "@mq9/broker";
import { PostgresStore } from "@mq9/broker/internal";
import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRegistry } from "../src/agent-registry.js";
import { openRegistry, type RegistrySettings } from "../src/open-registry.js";
import { PostgresRegistryStore } from "../src/store/postgres-registry-store.js";
import type { RegistryStore } from "../src/store/registry-store.js";
import { LocalVectorStore } from "../src/vectors/local-vector-store.js";
import { registryStoreConformance } from "./registry-store-conformance.js";

const missing = postgresMissing();
const user = (name: string, admin = false): Principal => ({ name, admin, mailboxGrants: [] });
const alice = user("alice");
const bob = user("bob");
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function names(registry: AgentRegistry, query: Record<string, unknown>): Promise<string[]> {
  const { agents } = await registry.discover(json(query));
  return agents.map((pieces) => JSON.parse(Buffer.concat(pieces.map((p) => Buffer.from(p))).toString()).name);
}

async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Two "nodes": two stores and registries on one schema, as two brokers of a cluster have them.
describe.skipIf(missing !== undefined)(`postgres registry${missing ? ` (skipped: ${missing})` : ""}`, () => {
  const db = usePrivatePostgres();
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const thing of opened.reverse()) await thing.close();
    opened.length = 0;
  });

  // One node's store; reopened as a new process would: a new pool on the same schema.
  const databases = new WeakMap<RegistryStore, { store: PostgresStore; schema: string }>();
  const openShared = async (schema: string) => {
    const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
    const shared = await PostgresRegistryStore.open({ ...store.sharedDatabase(), node: "a" });
    databases.set(shared, { store, schema });
    return shared;
  };
  const closeShared = async (shared: RegistryStore) => {
    await shared.close();
    await databases.get(shared)!.store.close();
  };
  registryStoreConformance("postgres", {
    open: () => openShared(freshSchema()),
    async reopen(previous) {
      await closeShared(previous);
      return openShared(databases.get(previous)!.schema);
    },
    close: closeShared,
    // The vectors are stored with the docs, through the registry's share of the local store.
    vectors: (store, local) => (store as PostgresRegistryStore).shareVectors(local),
  });

  const twoNodes = async (schema = freshSchema(), settings: RegistrySettings = { embedder: "none" }) => {
    const nodes: { store: PostgresStore; shared: PostgresRegistryStore; registry: AgentRegistry }[] = [];
    for (const node of ["a", "b"]) {
      const store = await PostgresStore.open({ url: db.pg.url, schema, poolSize: 4 });
      const shared = await PostgresRegistryStore.open({ ...store.sharedDatabase(), node });
      const vectorStore =
        settings.embedder === "none"
          ? undefined
          : shared.shareVectors(await LocalVectorStore.open({ dataDir: ":memory:" }));
      const registry = await openRegistry(
        { ...settings, store: shared, vectorStore },
        { dataDir: ":memory:", logger: console, sharedDatabase: store.sharedDatabase() },
      );
      opened.push(store, registry);
      nodes.push({ store, shared, registry });
    }
    return nodes;
  };

  // Two nodes, each with a local vector store shared through its registry store.
  const twoNodesWithVectors = async () => {
    const [a, b] = await twoNodes();
    const localA = await LocalVectorStore.open({ dataDir: ":memory:" });
    const localB = await LocalVectorStore.open({ dataDir: ":memory:" });
    const vectorsA = a.shared.shareVectors(localA);
    b.shared.shareVectors(localB);
    opened.push(localA, localB);
    return { a, b, localA, localB, vectorsA };
  };

  it("a REGISTER on one node is found by DISCOVER on the other; UNREGISTER there removes it here", async () => {
    const [a, b] = await twoNodes();
    await a.registry.register(
      json({
        name: "invoice-checker",
        mailbox: "invoice.inbox",
        payload: "checks invoices",
        tags: ["finance"],
      }),
    );
    expect(await names(a.registry, { text: "invoices" })).toEqual(["invoice-checker"]);
    await eventually(async () => (await names(b.registry, { text: "invoices" })).length === 1, "b to see it");
    expect(await names(b.registry, { tags: ["finance"] })).toEqual(["invoice-checker"]);
    await b.registry.unregister(json({ mailbox: "invoice.inbox" }));
    await eventually(async () => (await names(a.registry, {})).length === 0, "a to see it gone");
  });

  it("1,000 REGISTER→DISCOVER pairs on alternating nodes: each finds the agent at once by mailbox, name, tags and text", async () => {
    const nodes = await twoNodes();
    const misses: string[] = [];
    for (let i = 0; i < 1_000; i++) {
      const [writer, reader] = i % 2 === 0 ? nodes : [nodes[1], nodes[0]];
      const name = `ryw-agent-${i}`;
      const mailbox = `ryw.agent${i}.inbox`;
      const word = `zq${i.toString(36)}word`;
      await writer.registry.register(
        json({ name, mailbox, payload: `handles ${word} requests`, tags: [`t${i}`] }),
      );
      const found = await Promise.all([
        names(reader.registry, { mailbox }),
        names(reader.registry, { name }),
        names(reader.registry, { tags: [`t${i}`] }),
        names(reader.registry, { text: word }),
      ]);
      for (const [by, hits] of ["mailbox", "name", "tags", "text"].map((by, k) => [by, found[k]] as const)) {
        if (!hits.includes(name)) misses.push(`${name} by ${by}`);
      }
    }
    expect(misses).toEqual([]);
  }, 120_000);

  it("a DISCOVER by meaning right after a REGISTER on another node finds the agent or says its skills are pending", async () => {
    const nodes = await twoNodes(freshSchema(), { embedder: "static", threaded: false });
    for (let i = 0; i < 20; i++) {
      const [writer, reader] = i % 2 === 0 ? nodes : [nodes[1], nodes[0]];
      const name = `meaning-${i}`;
      await writer.registry.register(
        json({ name, mailbox: `meaning.agent${i}.inbox`, payload: `translates invoices into language ${i}` }),
      );
      const reply = await reader.registry.discover(json({ semantic: "translate an invoice", limit: 100 }));
      const found = reply.agents.some((pieces) =>
        Buffer.concat(pieces.map((p) => Buffer.from(p)))
          .toString()
          .includes(`"${name}"`),
      );
      if (!found) expect(reply.pendingSkills ?? 0, `${name}: neither found nor pending`).toBeGreaterThan(0);
    }
    // Once the writers stored the vectors, every node finds every agent by meaning.
    await eventually(async () => {
      for (const node of nodes) {
        const reply = await node.registry.discover(json({ semantic: "translate an invoice", limit: 100 }));
        if (reply.agents.length !== 20 || reply.pendingSkills !== undefined) return false;
      }
      return true;
    }, "every node to find every agent by meaning");
  });

  it("heartbeats through one node keep a registration alive on the other", async () => {
    const [a, b] = await twoNodes();
    await a.registry.register(json({ name: "beat", mailbox: "beat.inbox", payload: "x", ttl: 600 }));
    await eventually(async () => (await names(b.registry, { online: true })).includes("beat"), "b to see it");
    await b.registry.report(json({ mailbox: "beat.inbox", report_info: "busy" }));
    const seen = await eventually(async () => {
      const rows = await a.shared.get(["beat.inbox"], Date.now());
      return rows[0]?.statusJson ? rows[0] : undefined;
    }, "a to see the heartbeat");
    expect(seen.statusJson).toContain("busy");
  });

  it("a heartbeat taken by a node that has not followed the REGISTER yet: that node still finds the agent", async () => {
    const [a, b] = await twoNodes();
    // Several agents: the follow timer could run between one REGISTER and its heartbeat.
    for (let i = 0; i < 3; i++) {
      const mailbox = `early.beat${i}.inbox`;
      await a.registry.register(json({ name: `early-beat-${i}`, mailbox, payload: "x", ttl: 600 }));
      await b.registry.report(json({ mailbox, report_info: `beat ${i}` }));
      const { agents } = await b.registry.discover(json({ mailbox, include_status: true }));
      const text = agents.map((pieces) => Buffer.concat(pieces.map((p) => Buffer.from(p))).toString());
      expect(text, `b's DISCOVER of ${mailbox}`).toHaveLength(1);
      expect(text[0]).toContain(`beat ${i}`);
    }
  });

  it("a heartbeat taken by a node that has not followed a new REGISTER of a known agent: that node loads it", async () => {
    const [a, b] = await twoNodes();
    for (let i = 0; i < 3; i++) {
      const mailbox = `again.beat${i}.inbox`;
      const name = `again-beat-${i}`;
      await a.registry.register(json({ name, mailbox, payload: `first card ${i}`, ttl: 600 }));
      await eventually(async () => (await names(b.registry, { mailbox })).length === 1, "b to see it");
      // Registered again with a new card on a; its heartbeat reaches b before b follows.
      await a.registry.register(json({ name, mailbox, payload: `second card ${i}`, ttl: 600 }));
      await b.registry.report(json({ mailbox, report_info: `beat ${i}` }));
      expect(await names(b.registry, { text: "second" }), `b's DISCOVER of ${mailbox}`).toContain(name);
    }
  });

  it("expired registrations are purged once, by the lock holder, and vanish everywhere", async () => {
    const [a, b] = await twoNodes();
    const now = Date.now();
    // A ttl long enough that the nodes' own expiry runs leave it to the calls below, however slow.
    await a.registry.register(json({ name: "brief", mailbox: "brief.inbox", payload: "x", ttl: 600 }));
    await eventually(async () => (await b.shared.get(["brief.inbox"], now)).length === 1, "b to see it");
    const later = now + 700_000;
    // Whichever node took the expiry lock purges it; the other purges nothing.
    const purged = [await a.shared.purgeExpired(later), await b.shared.purgeExpired(later)];
    expect(purged.flatMap((p) => p.mailboxes)).toEqual(["brief.inbox"]);
    expect(
      await db.pg.query(
        `SELECT count(*) FROM ${a.store.schema}.registry_removals WHERE mailbox = 'brief.inbox'`,
      ),
    ).toBe("1");
    await eventually(async () => (await b.shared.count(now)) === 0, "b to forget it");
  });

  it("vectors are computed by the node that took the REGISTER and loaded by the others", async () => {
    const { a, b, localB, vectorsA } = await twoNodesWithVectors();
    await a.registry.register(json({ name: "v", mailbox: "v.inbox", payload: "vectors" }));
    const toEmbed = await a.shared.docsToEmbed("m1", 0, 10);
    expect(toEmbed).toHaveLength(1);
    expect(await b.shared.docsToEmbed("m1", 0, 10)).toEqual([]);
    expect(await a.shared.markEmbedded([toEmbed[0].id], "m1")).toEqual([toEmbed[0].id]);
    const vector = new Float32Array([0.6, 0.8, 0]);
    await vectorsA.upsert([{ id: toEmbed[0].id, agent: "v.inbox", vector }]);
    await eventually(async () => (await localB.count()) === 1, "b to load the vector");
    const [hit] = await localB.query(new Float32Array([0.6, 0.8, 0]), {}, 1);
    expect(hit).toMatchObject({ id: toEmbed[0].id, agent: "v.inbox" });
    expect(hit.score).toBeCloseTo(1, 5);
    expect(await a.shared.embeddedSummary()).toEqual({ models: ["m1"], count: 1 });
    await a.registry.unregister(json({ mailbox: "v.inbox" }));
    await eventually(async () => (await localB.count()) === 0, "b to drop the vector");
  });

  it("vectors a node stores for docs another node has replaced since: the node loads the new registration, keeps no stale vector", async () => {
    const { a, b, localA, vectorsA } = await twoNodesWithVectors();
    // The vector arrives before a followed the new REGISTER, then after.
    for (const followedFirst of [false, true]) {
      const name = `swap-${followedFirst}`;
      const mailbox = `swap.${followedFirst}.inbox`;
      await a.registry.register(json({ name, mailbox, payload: `first words ${name}` }));
      const old = (await a.shared.docsToEmbed("m1", 0, 100)).find((d) => d.mailbox === mailbox)!;
      await eventually(async () => (await names(b.registry, { mailbox })).length === 1, "b to see it");
      // Registered again through b while a is still embedding the first docs.
      await b.registry.register(json({ name, mailbox, payload: `second words ${name}` }));
      if (followedFirst) await names(a.registry, { mailbox });
      await vectorsA.upsert([{ id: old.id, agent: mailbox, vector: new Float32Array([0.6, 0.8, 0]) }]);
      await eventually(
        async () => (await names(a.registry, { text: "second" })).includes(name),
        `a to load b's registration of ${name}`,
      );
      expect(await names(a.registry, { text: "first" })).toEqual([]);
      expect(await localA.count(), `${name}: the replaced doc's vector`).toBe(0);
    }
  });

  it("registrations keep their owner in PostgreSQL: other nodes and a restarted one enforce it", async () => {
    const schema = freshSchema();
    const [a, b] = await twoNodes(schema);
    const card = { name: "alice.agent", mailbox: "alice.inbox", payload: "alice's agent", ttl: 600 };
    await a.registry.register(json(card), alice);
    expect(
      await db.pg.query(`SELECT owner FROM ${schema}.registry_agents WHERE mailbox = 'alice.inbox'`),
    ).toBe("alice");
    await eventually(async () => (await names(b.registry, {})).includes("alice.agent"), "b to see it");
    // On the other node, bob can neither replace it, nor take its name, nor remove or report for it.
    await expect(b.registry.register(json({ ...card, payload: "bob was here" }), bob)).rejects.toMatchObject({
      code: "PERMISSION_DENIED",
    });
    await expect(
      b.registry.register(json({ name: "alice.agent", mailbox: "bob.inbox", payload: "x" }), bob),
    ).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    await expect(b.registry.unregister(json({ mailbox: "alice.inbox" }), bob)).rejects.toMatchObject({
      code: "PERMISSION_DENIED",
    });
    await b.registry.unregister(json({ name: "alice.agent" }), bob);
    await expect(
      b.registry.report(json({ name: "alice.agent", status: "hacked" }), bob),
    ).rejects.toMatchObject({
      code: "AGENT_NOT_FOUND",
    });
    expect(await db.pg.query(`SELECT count(*) FROM ${schema}.registry_agents WHERE owner = 'alice'`)).toBe(
      "1",
    );
    // A node started later loads the owner from the rows, not from what it saw being written.
    const [c] = await twoNodes(schema);
    await expect(c.registry.register(json({ ...card, payload: "bob again" }), bob)).rejects.toMatchObject({
      code: "PERMISSION_DENIED",
    });
    // The owner's own requests go through on any node, and an admin's change leaves it the owner's.
    await c.registry.report(json({ name: "alice.agent", status: "fine" }), alice);
    await c.registry.register(json({ ...card, payload: "tidied by the admin" }), user("root", true));
    expect(
      await db.pg.query(`SELECT owner FROM ${schema}.registry_agents WHERE mailbox = 'alice.inbox'`),
    ).toBe("alice");
    await b.registry.unregister(json({ name: "alice.agent" }), alice);
    await eventually(async () => (await names(a.registry, {})).length === 0, "a to see it gone");
  });
});
