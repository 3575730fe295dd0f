import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteRegistryStore } from "../src/index.js";
import { REGISTRY_SCHEMA_VERSION } from "../src/store/registry-schema.js";
import { tempDir } from "./harness.js";

/** registry.db as the first release wrote it: skill texts in FTS5, agents WITHOUT ROWID. */
const VERSION_0 = `
CREATE TABLE agents (
  mailbox TEXT PRIMARY KEY, name TEXT NOT NULL, body TEXT NOT NULL, agent_info TEXT NOT NULL,
  own_name INTEGER NOT NULL, tags TEXT NOT NULL, ttl_s INTEGER NOT NULL, registered_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL, expires_ms INTEGER, status TEXT
) WITHOUT ROWID;
CREATE INDEX agents_by_name ON agents(name, mailbox);
CREATE INDEX agents_by_expiry ON agents(expires_ms) WHERE expires_ms IS NOT NULL;
CREATE TABLE agent_tags (tag TEXT NOT NULL, mailbox TEXT NOT NULL, PRIMARY KEY (tag, mailbox)) WITHOUT ROWID;
CREATE TABLE skill_docs (id INTEGER PRIMARY KEY AUTOINCREMENT, mailbox TEXT NOT NULL, vec_model TEXT);
CREATE INDEX skill_docs_by_mailbox ON skill_docs(mailbox);
CREATE INDEX skill_docs_by_model ON skill_docs(vec_model, id);
CREATE VIRTUAL TABLE skill_fts USING fts5(
  agent_name, agent_description, skill_name, skill_description, tags, examples,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
`;

describe("registry.db layout", () => {
  it("upgrades a version 0 file: agents, skill texts, vector marks and the doc id sequence survive", async () => {
    const dir = tempDir();
    const old = new Database(join(dir, "registry.db"));
    old.exec(VERSION_0);
    const body = JSON.stringify({ name: "translator", mailbox: "agent.translator.inbox", tags: ["lang"] });
    old
      .prepare("INSERT INTO agents VALUES (?, 'translator', ?, ?, 1, '[\"lang\"]', 0, 1, 1, NULL, NULL)")
      .run("agent.translator.inbox", body, body);
    // Docs 1 and 3 were deleted before the upgrade; doc 2 is the agent's skill and has a vector.
    old.prepare("INSERT INTO skill_docs (mailbox) VALUES ('gone')").run();
    old.prepare("INSERT INTO skill_docs (mailbox, vec_model) VALUES ('agent.translator.inbox', 'm1')").run();
    old.prepare("INSERT INTO skill_docs (mailbox) VALUES ('gone')").run();
    old.prepare("DELETE FROM skill_docs WHERE id <> 2").run();
    old
      .prepare(
        "INSERT INTO skill_fts (rowid, agent_name, agent_description, skill_name, skill_description, tags, examples) VALUES (2, 'translator', '', 'Translate', 'Translates documents into Japanese', 'lang', '')",
      )
      .run();
    old.close();

    const store = new SqliteRegistryStore({ dataDir: dir });
    expect((await store.list({}, 10, 0, 10)).map((a) => [a.mailbox, a.bodyJson])).toEqual([
      ["agent.translator.inbox", body],
    ]);
    expect((await store.search("japanese documents", {}, 10, 0, 10)).map((r) => r.mailbox)).toEqual([
      "agent.translator.inbox",
    ]);
    expect((await store.candidates({ tags: ["lang"] }, 10)).has("agent.translator.inbox")).toBe(true);
    expect(await store.embeddedSummary()).toEqual({ models: ["m1"], count: 1 });
    expect((await store.docsToEmbed("m2", 0, 10)).map((d) => [d.id, d.skillDescription])).toEqual([
      [2, "Translates documents into Japanese"],
    ]);
    const { ids } = await store.put(
      {
        mailbox: "agent.other.inbox",
        name: "other",
        bodyJson: '{"mailbox":"agent.other.inbox"}',
        agentInfo: "",
        hasOwnName: false,
        tags: [],
        ttlS: 0,
        registeredMs: 1,
        lastSeenMs: 1,
      },
      [
        {
          agentName: "other",
          agentDescription: "",
          skillName: "",
          skillDescription: "",
          tags: "",
          examples: "",
        },
      ],
    );
    // Ids are never reused, not even those of docs deleted before the upgrade.
    expect(ids).toEqual([4]);
    await store.close();

    const file = new Database(join(dir, "registry.db"), { readonly: true });
    expect(file.pragma("user_version", { simple: true })).toBe(REGISTRY_SCHEMA_VERSION);
    const tables = file.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
      name: string;
    }[];
    expect(tables.map((t) => t.name)).not.toContain("skill_fts");
    file.close();
  });

  it("refuses a file from a newer version with a message that says what to do", () => {
    const dir = tempDir();
    const db = new Database(join(dir, "registry.db"));
    db.pragma("user_version = 99");
    db.close();
    expect(() => new SqliteRegistryStore({ dataDir: dir })).toThrow(/newer than this mq9 understands/);
  });

  it("upgrades a version 1 file to 2: registrations stay and gain an owner", async () => {
    const dir = tempDir();
    let store = new SqliteRegistryStore({ dataDir: dir });
    const row = {
      mailbox: "agent.one",
      name: "one",
      bodyJson: '{"mailbox":"agent.one","name":"one"}',
      agentInfo: "one",
      hasOwnName: true,
      tags: [],
      ttlS: 0,
      registeredMs: 1,
      lastSeenMs: 1,
    };
    await store.put(row, []);
    await store.close();
    const raw = new Database(join(dir, "registry.db"));
    raw.exec("ALTER TABLE agents DROP COLUMN owner; ALTER TABLE agents DROP COLUMN kind");
    raw.pragma("user_version = 1");
    raw.close();
    store = new SqliteRegistryStore({ dataDir: dir });
    try {
      const [kept] = await store.get(["agent.one"], 2);
      expect(kept).toMatchObject({ mailbox: "agent.one", name: "one", owner: undefined });
      await store.put({ ...row, mailbox: "agent.two", name: "two", owner: "alice" }, []);
      expect(await store.select({ name: "two", owner: "alice" }, 2)).toHaveLength(1);
      expect(await store.select({ name: "two", owner: "bob" }, 2)).toHaveLength(0);
    } finally {
      await store.close();
    }
    const reopened = new SqliteRegistryStore({ dataDir: dir });
    expect((await reopened.get(["agent.two"], 2))[0]?.owner).toBe("alice");
    await reopened.close();
  });

  it("upgrades a version 2 file to 3: registrations stay agents, and MCP servers keep their kind", async () => {
    const dir = tempDir();
    let store = new SqliteRegistryStore({ dataDir: dir });
    const row = {
      mailbox: "agent.one",
      name: "one",
      bodyJson: '{"mailbox":"agent.one","name":"one"}',
      agentInfo: "one",
      hasOwnName: true,
      tags: [],
      ttlS: 0,
      registeredMs: 1,
      lastSeenMs: 1,
    };
    await store.put(row, []);
    await store.close();
    const raw = new Database(join(dir, "registry.db"));
    raw.exec("ALTER TABLE agents DROP COLUMN kind");
    raw.pragma("user_version = 2");
    raw.close();
    store = new SqliteRegistryStore({ dataDir: dir });
    try {
      expect((await store.get(["agent.one"], 2))[0].kind).toBeUndefined();
      await store.put({ ...row, mailbox: "mcp-server:https://h.test/mcp", kind: "mcp-server" }, []);
    } finally {
      await store.close();
    }
    const reopened = new SqliteRegistryStore({ dataDir: dir });
    expect((await reopened.get(["mcp-server:https://h.test/mcp"], 2))[0]?.kind).toBe("mcp-server");
    expect((await reopened.list({ kinds: ["agent"] }, 2, 0, 10)).map((r) => r.mailbox)).toEqual([
      "agent.one",
    ]);
    await reopened.close();
  });
});
