import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentRow, RegistryStore, SkillDoc } from "../src/store/registry-store.js";
import { LocalVectorStore } from "../src/vectors/local-vector-store.js";
import type { VectorStore } from "../src/vectors/vector-store.js";

export interface RegistryStoreFactory {
  /** A fresh, empty store. */
  open(): Promise<RegistryStore>;
  /** The same registry opened again, as after a restart (the previous store is closed by it). */
  reopen(previous: RegistryStore): Promise<RegistryStore>;
  /** Closes the store and whatever was opened for it; default: `store.close()`. */
  close?(store: RegistryStore): Promise<void>;
  /**
   * The vector store the embedding indexer writes through for this registry store, given the
   * node-local one: the local store itself, or the registry's share of it when vectors are stored
   * with the docs.
   */
  vectors(store: RegistryStore, local: VectorStore): VectorStore;
}

const T0 = 1_800_000_000_000;

function agent(mailbox: string, extra: Partial<AgentRow> = {}): AgentRow {
  const name = extra.name ?? mailbox.split(".")[0];
  return {
    mailbox,
    name,
    bodyJson: JSON.stringify({ name, mailbox, payload: `the ${name} agent` }),
    agentInfo: `${name} — an agent`,
    hasOwnName: true,
    tags: [],
    ttlS: 0,
    registeredMs: T0,
    lastSeenMs: T0,
    ...extra,
  };
}

function doc(skillName: string, skillDescription: string, extra: Partial<SkillDoc> = {}): SkillDoc {
  return {
    agentName: "",
    agentDescription: "",
    skillName,
    skillDescription,
    tags: "",
    examples: "",
    ...extra,
  };
}

const mailboxes = (rows: { mailbox: string }[]) => rows.map((r) => r.mailbox);
const sorted = (rows: { mailbox: string }[]) => mailboxes(rows).sort();

/**
 * The behaviour every RegistryStore must show, whichever database holds the registrations.
 * A new backend runs this suite against the real thing; passing it is what makes the backend
 * usable by the agent registry.
 */
export function registryStoreConformance(name: string, factory: RegistryStoreFactory): void {
  describe(`registry store conformance — ${name}`, () => {
    let store: RegistryStore;
    const locals: VectorStore[] = [];

    beforeEach(async () => {
      store = await factory.open();
    });
    afterEach(async () => {
      await (factory.close ? factory.close(store) : store.close());
      for (const local of locals.splice(0)) await local.close();
    });

    /** Marks docs embedded and stores their vectors, in the embedding indexer's order. */
    const embed = async (ids: number[], model: string, mailbox: string) => {
      const local = await LocalVectorStore.open({ dataDir: ":memory:" });
      locals.push(local);
      const present = await store.markEmbedded(ids, model);
      await factory
        .vectors(store, local)
        .upsert(present.map((id) => ({ id, agent: mailbox, vector: new Float32Array([0.6, 0.8]) })));
      return present;
    };

    it("put and get — a registration reads back field for field; unknown mailboxes are left out", async () => {
      const row = agent("alpha.inbox", {
        name: "Älpha 代理 🤖",
        bodyJson: JSON.stringify({ name: "Älpha 代理 🤖", payload: "x".repeat(100_000), quote: "'\"\\" }),
        agentInfo: "línea 1\nline 2\ttab",
        hasOwnName: false,
        tags: ["finance", "eu"],
        ttlS: 600,
        registeredMs: T0 - 5_000,
        lastSeenMs: T0 - 1_000,
        owner: "alice",
      });
      const { ids, replaced } = await store.put(row, [doc("a", "first"), doc("b", "second")]);
      expect(ids).toHaveLength(2);
      expect(ids[0]).toBeLessThan(ids[1]);
      expect(replaced).toEqual([]);
      expect(await store.get(["alpha.inbox", "nope.inbox"], T0)).toEqual([row]);
      expect(await store.get(["nope.inbox"], T0)).toEqual([]);
      expect(await store.get([], T0)).toEqual([]);
    });

    it("put — a registration without docs or owner is stored too", async () => {
      const { ids } = await store.put(agent("bare.inbox"), []);
      expect(ids).toEqual([]);
      const [row] = await store.get(["bare.inbox"], T0);
      expect(row).toEqual(agent("bare.inbox"));
      expect(row.owner).toBeUndefined();
      expect(row.statusJson).toBeUndefined();
    });

    it("put — a second put replaces the registration, its docs and its status; doc ids are never reused", async () => {
      const first = await store.put(agent("a.inbox", { owner: "alice", tags: ["old"] }), [
        doc("old", "old skill"),
        doc("older", "older skill"),
      ]);
      expect(await store.report({ mailbox: "a.inbox" }, '{"state":"busy"}', T0 + 10)).toBe(1);
      const second = await store.put(agent("a.inbox", { owner: "bob", tags: ["new"] }), [
        doc("new", "new skill"),
      ]);
      expect(second.replaced.sort((x, y) => x - y)).toEqual(first.ids);
      expect(second.ids[0]).toBeGreaterThan(Math.max(...first.ids));
      expect(await store.get(["a.inbox"], T0)).toEqual([agent("a.inbox", { owner: "bob", tags: ["new"] })]);
      expect(await store.search("older", {}, T0, 0, 10)).toEqual([]);
      expect(mailboxes(await store.search("new", {}, T0, 0, 10))).toEqual(["a.inbox"]);
      expect(await store.countMatching({ tags: ["old"] }, T0)).toBe(0);
      expect(await store.count(T0)).toBe(1);
      // Removed and registered again: still a fresh id.
      await store.remove({ mailbox: "a.inbox" });
      const third = await store.put(agent("a.inbox"), [doc("again", "again")]);
      expect(third.replaced).toEqual([]);
      expect(third.ids[0]).toBeGreaterThan(second.ids[0]);
    });

    it("select — by mailbox, by name (every mailbox of it), both at once, and by owner; live ones only", async () => {
      await store.put(agent("one.inbox", { name: "twin", owner: "alice" }), []);
      await store.put(agent("two.inbox", { name: "twin", owner: "bob" }), []);
      await store.put(agent("solo.inbox", { owner: "alice" }), []);
      await store.put(agent("brief.inbox", { name: "twin", ttlS: 1 }), []);
      expect(sorted(await store.select({ mailbox: "solo.inbox" }, T0))).toEqual(["solo.inbox"]);
      expect(sorted(await store.select({ name: "twin" }, T0))).toEqual([
        "brief.inbox",
        "one.inbox",
        "two.inbox",
      ]);
      expect(sorted(await store.select({ name: "twin" }, T0 + 1_000))).toEqual(["one.inbox", "two.inbox"]);
      expect(sorted(await store.select({ mailbox: "solo.inbox", name: "twin" }, T0 + 1_000))).toEqual([
        "one.inbox",
        "solo.inbox",
        "two.inbox",
      ]);
      expect(sorted(await store.select({ name: "twin", owner: "alice" }, T0))).toEqual(["one.inbox"]);
      expect(await store.select({ mailbox: "two.inbox", owner: "alice" }, T0)).toEqual([]);
      expect(await store.select({ mailbox: "nope.inbox" }, T0)).toEqual([]);
      expect(await store.select({ name: "nobody" }, T0)).toEqual([]);
      // The name is matched exactly: case and Unicode form are namesakes' business.
      expect(await store.select({ name: "TWIN" }, T0)).toEqual([]);
    });

    it("remove — returns the registrations and doc ids it deleted, expired ones included; the rest stay", async () => {
      const one = await store.put(agent("one.inbox", { name: "twin", owner: "alice" }), [doc("s", "x")]);
      const two = await store.put(agent("two.inbox", { name: "twin", owner: "bob" }), [
        doc("s", "x"),
        doc("t", "y"),
      ]);
      const gone = await store.put(agent("gone.inbox", { ttlS: 1 }), [doc("g", "z")]);
      await store.put(agent("keep.inbox"), [doc("k", "w")]);

      // The owner narrows the selection: bob's twin stays.
      const alices = await store.remove({ name: "twin", owner: "alice" });
      expect(alices).toEqual({ mailboxes: ["one.inbox"], docIds: one.ids });
      const rest = await store.remove({ name: "twin" });
      expect(rest.mailboxes).toEqual(["two.inbox"]);
      expect(rest.docIds.sort((a, b) => a - b)).toEqual(two.ids);
      // An expired registration is removed too (it is still there until purged).
      expect(await store.remove({ mailbox: "gone.inbox" })).toEqual({
        mailboxes: ["gone.inbox"],
        docIds: gone.ids,
      });
      expect(await store.remove({ mailbox: "gone.inbox" })).toEqual({ mailboxes: [], docIds: [] });
      expect(await store.remove({ name: "nobody" })).toEqual({ mailboxes: [], docIds: [] });
      expect(mailboxes(await store.list({}, T0, 0, 10))).toEqual(["keep.inbox"]);
      expect(await store.count(T0)).toBe(1);
    });

    it("report — records status and last-seen and renews the ttl of live registrations only", async () => {
      await store.put(agent("beat.inbox", { ttlS: 10, owner: "alice" }), []);
      await store.put(agent("still.inbox", { ttlS: 0 }), []);
      await store.put(agent("late.inbox", { ttlS: 1 }), []);

      expect(await store.report({ mailbox: "beat.inbox" }, '{"load":0.5}', T0 + 9_000)).toBe(1);
      const [row] = await store.get(["beat.inbox"], T0 + 9_000);
      expect(row).toMatchObject({ lastSeenMs: T0 + 9_000, statusJson: '{"load":0.5}', registeredMs: T0 });
      // Renewed: alive past its first expiry, until ten seconds after the report.
      expect(mailboxes(await store.get(["beat.inbox"], T0 + 18_999))).toEqual(["beat.inbox"]);
      expect(await store.get(["beat.inbox"], T0 + 19_000)).toEqual([]);

      // Without a ttl, a report records the status and it never expires.
      expect(await store.report({ mailbox: "still.inbox" }, "{}", T0 + 5)).toBe(1);
      expect((await store.get(["still.inbox"], T0 + 10 ** 9))[0]).toMatchObject({ statusJson: "{}" });

      // An expired one, one of another owner, and a missing one are not reported.
      expect(await store.report({ mailbox: "late.inbox" }, "{}", T0 + 1_000)).toBe(0);
      expect(await store.get(["late.inbox"], T0 + 500)).toEqual([agent("late.inbox", { ttlS: 1 })]);
      expect(await store.report({ mailbox: "beat.inbox", owner: "bob" }, "{}", T0 + 9_500)).toBe(0);
      expect(await store.report({ mailbox: "nope.inbox" }, "{}", T0)).toBe(0);
      expect((await store.get(["beat.inbox"], T0 + 9_500))[0].statusJson).toBe('{"load":0.5}');
    });

    it("ttl — a registration is live until lastSeen + ttl, exclusive, in every read", async () => {
      await store.put(agent("brief.inbox", { name: "Brief", ttlS: 2, tags: ["t"], owner: "alice" }), [
        doc("brief", "ephemeral skill"),
      ]);
      await store.put(agent("ever.inbox", { name: "ever", tags: ["t"], owner: "alice" }), [
        doc("ever", "ephemeral skill"),
      ]);
      const reads = async (now: number) => ({
        get: sorted(await store.get(["brief.inbox", "ever.inbox"], now)),
        select: sorted(await store.select({ mailbox: "brief.inbox" }, now)),
        list: mailboxes(await store.list({ tags: ["t"] }, now, 0, 10)),
        search: sorted(await store.search("ephemeral", {}, now, 0, 10)),
        candidates: [...(await store.candidates({}, now))].sort(),
        countMatching: await store.countMatching({ tags: ["t"] }, now),
        countSearch: await store.countSearch("ephemeral", {}, now),
        count: await store.count(now),
        namesakes: sorted(await store.namesakes("brief", now)),
        owners: await store.owners(now, 10),
      });
      expect(await reads(T0 + 1_999)).toEqual({
        get: ["brief.inbox", "ever.inbox"],
        select: ["brief.inbox"],
        list: ["brief.inbox", "ever.inbox"],
        search: ["brief.inbox", "ever.inbox"],
        candidates: ["brief.inbox", "ever.inbox"],
        countMatching: 2,
        countSearch: 2,
        count: 2,
        namesakes: ["brief.inbox"],
        owners: [{ owner: "alice", count: 2, mailboxes: ["brief.inbox", "ever.inbox"] }],
      });
      expect(await reads(T0 + 2_000)).toEqual({
        get: ["ever.inbox"],
        select: [],
        list: ["ever.inbox"],
        search: ["ever.inbox"],
        candidates: ["ever.inbox"],
        countMatching: 1,
        countSearch: 1,
        count: 1,
        namesakes: [],
        owners: [{ owner: "alice", count: 1, mailboxes: ["ever.inbox"] }],
      });
      // Reads take the time they are given: an earlier time sees it again until it is purged.
      expect(await store.count(T0)).toBe(2);
    });

    it("purgeExpired — deletes registrations whose ttl has passed, with their docs, once", async () => {
      const brief = await store.put(agent("brief.inbox", { ttlS: 1 }), [doc("a", "x"), doc("b", "y")]);
      await store.put(agent("ever.inbox"), [doc("c", "z")]);
      expect(await store.purgeExpired(T0 + 999)).toEqual({ mailboxes: [], docIds: [] });
      const purged = await store.purgeExpired(T0 + 1_000);
      expect(purged.mailboxes).toEqual(["brief.inbox"]);
      expect(purged.docIds.sort((a, b) => a - b)).toEqual(brief.ids);
      expect(await store.purgeExpired(T0 + 1_000)).toEqual({ mailboxes: [], docIds: [] });
      // Gone at every time now, and its docs no longer wait for vectors.
      expect(await store.get(["brief.inbox"], T0)).toEqual([]);
      expect(await store.count(T0)).toBe(1);
      expect((await store.docsToEmbed("m", 0, 10)).map((d) => d.mailbox)).toEqual(["ever.inbox"]);
      // The mailbox can be registered again.
      await store.put(agent("brief.inbox", { lastSeenMs: T0 + 2_000, ttlS: 1 }), []);
      expect(mailboxes(await store.get(["brief.inbox"], T0 + 2_500))).toEqual(["brief.inbox"]);
    });

    it("list — by name then mailbox, paginated; filters by tags (all of them), mailbox, name and online", async () => {
      const rows = [
        agent("m3.inbox", { name: "beta", tags: ["x", "y"] }),
        agent("m1.inbox", { name: "beta", tags: ["x"], ttlS: 60 }),
        agent("m2.inbox", { name: "alpha", tags: ["y"] }),
        agent("m0.inbox", { name: "gamma", tags: ["x", "y"], ttlS: 60 }),
        agent("m4.inbox", { name: "Alpha" }),
      ];
      for (const row of rows) await store.put(row, []);
      const all = ["m4.inbox", "m2.inbox", "m1.inbox", "m3.inbox", "m0.inbox"];
      expect(mailboxes(await store.list({}, T0, 0, 100))).toEqual(all);
      const pages: string[] = [];
      for (let offset = 0; offset < 6; offset += 2)
        pages.push(...mailboxes(await store.list({}, T0, offset, 2)));
      expect(pages).toEqual(all);
      expect(await store.list({}, T0, 5, 10)).toEqual([]);
      expect(await store.list({}, T0, 0, 0)).toEqual([]);
      expect(await store.countMatching({}, T0)).toBe(5);

      const cases: [Parameters<RegistryStore["list"]>[0], string[]][] = [
        [{ tags: ["x"] }, ["m1.inbox", "m3.inbox", "m0.inbox"]],
        [{ tags: ["x", "y"] }, ["m3.inbox", "m0.inbox"]],
        [{ tags: ["x", "nope"] }, []],
        [{ name: "beta" }, ["m1.inbox", "m3.inbox"]],
        [{ name: "alpha" }, ["m2.inbox"]],
        [{ mailbox: "m3.inbox" }, ["m3.inbox"]],
        [{ mailbox: "m3.inbox", tags: ["y"] }, ["m3.inbox"]],
        [{ mailbox: "m1.inbox", tags: ["y"] }, []],
        [{ mailbox: "nope.inbox" }, []],
        [{ online: true }, ["m1.inbox", "m0.inbox"]],
        [{ online: true, tags: ["y"] }, ["m0.inbox"]],
      ];
      for (const [filter, expected] of cases) {
        const what = JSON.stringify(filter);
        expect(mailboxes(await store.list(filter, T0, 0, 100)), what).toEqual(expected);
        expect(await store.countMatching(filter, T0), what).toBe(expected.length);
        expect([...(await store.candidates(filter, T0))].sort(), what).toEqual([...expected].sort());
      }
      expect(mailboxes(await store.list({ tags: ["x"] }, T0, 1, 1))).toEqual(["m3.inbox"]);
      // online: agents with a ttl, while it lasts.
      expect(mailboxes(await store.list({ online: true }, T0 + 60_000, 0, 100))).toEqual([]);
    });

    it("kinds — MCP servers are kept apart from agents by the kind filter in every read, and across a reopen", async () => {
      const server = (key: string, extra: Partial<AgentRow> = {}) =>
        agent(`mcp-server:https://${key}/mcp`, { name: key.split(".")[0], kind: "mcp-server", ...extra });
      await store.put(agent("a.inbox", { name: "alpha", tags: ["x"] }), [
        doc("weather", "weather for agents"),
      ]);
      await store.put(agent("b.inbox", { name: "beta" }), []);
      await store.put(server("tools.example.com", { tags: ["x"], ttlS: 60 }), [
        doc("get_weather", "current weather for a city"),
      ]);
      await store.put(server("more.example.com"), []);
      const agents = ["a.inbox", "b.inbox"];
      const servers = ["mcp-server:https://more.example.com/mcp", "mcp-server:https://tools.example.com/mcp"];
      const cases: [Parameters<RegistryStore["list"]>[0], string[]][] = [
        [{}, [...agents, ...servers]],
        [{ kinds: ["agent"] }, agents],
        [{ kinds: ["mcp-server"] }, servers],
        [{ kinds: ["agent", "mcp-server"] }, [...agents, ...servers]],
        [{ kinds: ["agent"], tags: ["x"] }, ["a.inbox"]],
        [{ kinds: ["mcp-server"], tags: ["x"] }, [servers[1]]],
        [{ kinds: ["mcp-server"], online: true }, [servers[1]]],
        [{ kinds: ["agent"], mailbox: servers[0] }, []],
        [{ kinds: ["mcp-server"], name: "more" }, [servers[0]]],
      ];
      for (const [filter, expected] of cases) {
        const what = JSON.stringify(filter);
        expect(sorted(await store.list(filter, T0, 0, 100)), what).toEqual([...expected].sort());
        expect(await store.countMatching(filter, T0), what).toBe(expected.length);
        expect([...(await store.candidates(filter, T0))].sort(), what).toEqual([...expected].sort());
      }
      expect(mailboxes(await store.search("weather", { kinds: ["agent"] }, T0, 0, 10))).toEqual(["a.inbox"]);
      expect(mailboxes(await store.search("weather", { kinds: ["mcp-server"] }, T0, 0, 10))).toEqual([
        servers[1],
      ]);
      expect(await store.countSearch("weather", { kinds: ["mcp-server"] }, T0)).toBe(1);
      // An expired server is counted out of its kind, and agents alone still count right.
      expect(await store.countMatching({ kinds: ["agent"] }, T0 + 60_000)).toBe(2);
      expect(await store.countMatching({ kinds: ["mcp-server"] }, T0 + 60_000)).toBe(1);

      store = await factory.reopen(store);
      const [row] = await store.get([servers[1]], T0);
      expect(row.kind).toBe("mcp-server");
      expect((await store.get(["a.inbox"], T0))[0].kind).toBeUndefined();
      expect(sorted(await store.list({ kinds: ["mcp-server"] }, T0, 0, 100))).toEqual(servers);
      expect(await store.countMatching({ kinds: ["agent"] }, T0)).toBe(2);
    });

    it("search — one hit per agent at its best doc, best first, under the filter; paginated and counted", async () => {
      await store.put(agent("inv.inbox", { name: "invoices", tags: ["finance"] }), [
        doc("translate invoices", "translates invoices between languages"),
        doc("check invoices", "checks invoices for errors", { examples: "is this invoice right?" }),
      ]);
      await store.put(agent("poem.inbox", { name: "poet" }), [doc("translate poems", "translates poetry")]);
      await store.put(agent("tax.inbox", { name: "taxes", tags: ["finance"] }), [
        doc("file taxes", "files tax returns and reads invoices"),
      ]);
      const hits = await store.search("translate invoices", {}, T0, 0, 10);
      expect(mailboxes(hits)[0]).toBe("inv.inbox");
      expect(sorted(hits)).toEqual(["inv.inbox", "poem.inbox", "tax.inbox"]);
      for (let i = 1; i < hits.length; i++) expect(hits[i - 1].score).toBeGreaterThanOrEqual(hits[i].score);
      expect(hits.every((h) => h.score > 0)).toBe(true);
      expect(await store.countSearch("translate invoices", {}, T0)).toBe(3);

      expect(mailboxes(await store.search("translate invoices", {}, T0, 1, 10))).toEqual(
        mailboxes(hits).slice(1),
      );
      expect(mailboxes(await store.search("translate invoices", {}, T0, 0, 1))).toEqual([mailboxes(hits)[0]]);
      expect(sorted(await store.search("invoices", { tags: ["finance"] }, T0, 0, 10))).toEqual([
        "inv.inbox",
        "tax.inbox",
      ]);
      expect(await store.countSearch("invoices", { tags: ["finance"] }, T0)).toBe(2);
      expect(mailboxes(await store.search("poems", { tags: ["finance"] }, T0, 0, 10))).toEqual([]);
      expect(mailboxes(await store.search("translate", { name: "poet" }, T0, 0, 10))).toEqual(["poem.inbox"]);
      // Agent names and examples are searched too.
      expect(mailboxes(await store.search("poet", {}, T0, 0, 10))).toEqual(["poem.inbox"]);
      expect(mailboxes(await store.search("right", {}, T0, 0, 10))).toEqual(["inv.inbox"]);
      // No searchable word, or a word in no doc: nothing, and a total of 0.
      for (const text of ["", "   ", "?!", "zzzqqq"]) {
        expect(await store.search(text, {}, T0, 0, 10), text).toEqual([]);
        expect(await store.countSearch(text, {}, T0), text).toBe(0);
      }
    });

    it("namesakes — live registrations whose name matches up to case and Unicode form", async () => {
      await store.put(agent("a.inbox", { name: "Ｃafé-Agent" }), []);
      await store.put(agent("b.inbox", { name: "café-agent" }), []);
      await store.put(agent("c.inbox", { name: "cafe-agent" }), []);
      await store.put(agent("d.inbox", { name: "CAFÉ-AGENT", ttlS: 1 }), []);
      await store.put(agent("e.inbox", { name: "cafe\u0301-agent" }), []);
      expect(sorted(await store.namesakes("Café-Agent", T0))).toEqual([
        "a.inbox",
        "b.inbox",
        "d.inbox",
        "e.inbox",
      ]);
      expect(sorted(await store.namesakes("café-agent", T0 + 1_000))).toEqual([
        "a.inbox",
        "b.inbox",
        "e.inbox",
      ]);
      expect(await store.namesakes("nobody", T0)).toEqual([]);
      // Removed or renamed registrations are no longer namesakes.
      await store.remove({ mailbox: "a.inbox" });
      await store.put(agent("b.inbox", { name: "other" }), []);
      expect(sorted(await store.namesakes("CAFÉ-agent", T0))).toEqual(["d.inbox", "e.inbox"]);
    });

    it("owners — each user owning live registrations, by name, with its count and first mailboxes", async () => {
      for (const [mailbox, owner] of [
        ["b3.inbox", "bob"],
        ["a2.inbox", "alice"],
        ["b1.inbox", "bob"],
        ["b2.inbox", "bob"],
        ["nobody.inbox", undefined],
      ] as const) {
        await store.put(agent(mailbox, { owner }), []);
      }
      await store.put(agent("a1.inbox", { owner: "alice", ttlS: 1 }), []);
      expect(await store.owners(T0, 2)).toEqual([
        { owner: "alice", count: 2, mailboxes: ["a1.inbox", "a2.inbox"] },
        { owner: "bob", count: 3, mailboxes: ["b1.inbox", "b2.inbox"] },
      ]);
      expect(await store.owners(T0 + 1_000, 5)).toEqual([
        { owner: "alice", count: 1, mailboxes: ["a2.inbox"] },
        { owner: "bob", count: 3, mailboxes: ["b1.inbox", "b2.inbox", "b3.inbox"] },
      ]);
      await store.remove({ mailbox: "a2.inbox" });
      expect((await store.owners(T0 + 1_000, 5)).map((o) => o.owner)).toEqual(["bob"]);
    });

    it("embedding — docs wait for a model's vectors, oldest first, until marked and stored; reset starts over", async () => {
      const a = await store.put(agent("a.inbox"), [
        doc("one", "first", { agentName: "a", agentDescription: "desc", tags: "t1 t2", examples: "e1\ne2" }),
        doc("two", "second"),
      ]);
      const b = await store.put(agent("b.inbox"), [doc("three", "third")]);
      const all = [...a.ids, ...b.ids];
      const waiting = await store.docsToEmbed("m1", 0, 10);
      expect(waiting.map((d) => d.id)).toEqual(all);
      expect(waiting[0]).toEqual({
        id: a.ids[0],
        mailbox: "a.inbox",
        agentName: "a",
        agentDescription: "desc",
        skillName: "one",
        skillDescription: "first",
        tags: "t1 t2",
        examples: "e1\ne2",
      });
      expect((await store.docsToEmbed("m1", a.ids[0], 1)).map((d) => d.id)).toEqual([a.ids[1]]);
      expect(await store.docsToEmbed("m1", b.ids[0], 10)).toEqual([]);
      expect(await store.embeddedSummary()).toEqual({ models: [], count: 0 });

      expect(await embed(a.ids, "m1", "a.inbox")).toEqual(a.ids);
      expect((await store.docsToEmbed("m1", 0, 10)).map((d) => d.id)).toEqual(b.ids);
      // Another model's vectors are not this one's.
      expect((await store.docsToEmbed("m2", 0, 10)).map((d) => d.id)).toEqual(all);
      expect(await store.embeddedSummary()).toEqual({ models: ["m1"], count: 2 });

      // Ids of docs no longer there are left out.
      await store.remove({ mailbox: "b.inbox" });
      expect(await embed([...b.ids, 999_999], "m1", "b.inbox")).toEqual([]);
      expect(await store.docsToEmbed("m1", 0, 10)).toEqual([]);
      expect(await store.embeddedSummary()).toEqual({ models: ["m1"], count: 2 });

      // A replaced registration's docs are new: they wait again.
      const again = await store.put(agent("a.inbox"), [doc("one", "first, again")]);
      expect((await store.docsToEmbed("m1", 0, 10)).map((d) => d.id)).toEqual(again.ids);
      expect(await store.embeddedSummary()).toEqual({ models: [], count: 0 });
      await embed(again.ids, "m1", "a.inbox");

      await store.resetEmbedded();
      expect(await store.embeddedSummary()).toEqual({ models: [], count: 0 });
      expect((await store.docsToEmbed("m1", 0, 10)).map((d) => d.id)).toEqual(again.ids);
    });

    it("catchUp and awaitingVectors — a store with no other writer is up to date and waits for nothing", async () => {
      await store.put(agent("a.inbox"), [doc("one", "x")]);
      expect(await store.catchUp?.()).toBeUndefined();
      expect(store.awaitingVectors?.() ?? 0).toBe(0);
    });

    it("restart — registrations, owners, status, docs, vector marks and the doc id sequence survive a reopen", async () => {
      const owned = agent("owned.inbox", { name: "Owned", owner: "alice", tags: ["x"], ttlS: 600 });
      const first = await store.put(owned, [doc("ledger", "balances the ledger"), doc("audit", "audits")]);
      await store.put(agent("plain.inbox"), [doc("plain", "plain work")]);
      await store.put(agent("brief.inbox", { ttlS: 1 }), [doc("brief", "brief work")]);
      await store.report({ mailbox: "owned.inbox" }, '{"ok":true}', T0 + 100);
      await embed([first.ids[0]], "m1", "owned.inbox");
      const removed = await store.put(agent("gone.inbox"), [doc("gone", "gone")]);
      await store.remove({ mailbox: "gone.inbox" });
      const expected = await store.list({}, T0 + 100, 0, 100);

      store = await factory.reopen(store);
      expect(await store.list({}, T0 + 100, 0, 100)).toEqual(expected);
      expect(await store.get(["owned.inbox"], T0 + 100)).toEqual([
        { ...owned, lastSeenMs: T0 + 100, statusJson: '{"ok":true}' },
      ]);
      expect(await store.get(["brief.inbox"], T0 + 1_000)).toEqual([]);
      expect(await store.get(["gone.inbox"], T0)).toEqual([]);
      expect(mailboxes(await store.search("ledger", {}, T0, 0, 10))).toEqual(["owned.inbox"]);
      expect(mailboxes(await store.list({ tags: ["x"] }, T0, 0, 10))).toEqual(["owned.inbox"]);
      expect(sorted(await store.namesakes("owned", T0))).toEqual(["owned.inbox"]);
      expect(await store.owners(T0, 5)).toEqual([{ owner: "alice", count: 1, mailboxes: ["owned.inbox"] }]);
      expect(await store.embeddedSummary()).toEqual({ models: ["m1"], count: 1 });
      expect((await store.docsToEmbed("m1", 0, 10)).map((d) => d.skillName)).toEqual([
        "audit",
        "plain",
        "brief",
      ]);
      // The ttl still counts from the last heartbeat, and the expired one is purged after a restart.
      expect(await store.get(["owned.inbox"], T0 + 600_100)).toEqual([]);
      expect((await store.purgeExpired(T0 + 1_000)).mailboxes).toEqual(["brief.inbox"]);
      const next = await store.put(agent("new.inbox"), [doc("new", "new")]);
      expect(next.ids[0]).toBeGreaterThan(removed.ids[0]);
    });
  });
}
