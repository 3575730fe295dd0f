import { freshSchema, postgresMissing, usePrivatePostgres } from "@mq9/testkit";
import { connect } from "nats";
import { describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { mq9Client, payloads, type Reply } from "./cluster-harness.js";

const missing = postgresMissing();

/** Stops a broker with SIGTERM, as a supervisor would; it must drain and exit 0. */
async function stop(serve: ServeProcess): Promise<void> {
  serve.child.kill("SIGTERM");
  expect(await serve.exited).toBe(0);
}

/** Runs `body` against a client of `serve`, closing the client after. */
async function withClient<T>(serve: ServeProcess, body: (via: ReturnType<typeof mq9Client>) => Promise<T>) {
  const nc = await connect({ servers: `127.0.0.1:${serve.port}` });
  try {
    return await body(mq9Client(nc));
  } finally {
    await nc.close();
  }
}

// `mq9 serve --postgres URL` without --cluster: one broker with its own listener, every piece of
// state in PostgreSQL (so a host can be replaced, or the broker later joined by cluster nodes).
describe.skipIf(missing !== undefined)(
  `mq9 serve --postgres: one broker on PostgreSQL${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();

    it("keeps messages, group positions and registrations in PostgreSQL, where a second broker finds them", async () => {
      const schema = freshSchema();
      const flags = ["--postgres", db.pg.url, "--postgres-schema", schema, "--registry-embedder", "none"];
      const first = await spawnServe(flags);
      const ready =
        first
          .stdout()
          .split("\n")
          .find((line) => line.includes("broker ready")) ?? "";
      expect(JSON.parse(ready).store).toBe(`PostgreSQL (schema ${schema})`);
      const health = (await (await fetch(`http://127.0.0.1:${first.httpPort}/healthz`)).json()) as Reply;
      expect(health).toMatchObject({ ok: true, postgres: { up: true } });
      await withClient(first, async (via) => {
        expect(await via("$mq9.AI.MAILBOX.CREATE", { name: "pg.box" })).toEqual({
          error: "",
          mail_address: "pg.box",
        });
        await via("$mq9.AI.MSG.SEND.pg.box", "m0");
        await via("$mq9.AI.MSG.SEND.pg.box", "m1", { headers: { "mq9-priority": "urgent" } });
        await via("$mq9.AI.MSG.SEND.pg.box", "m2");
        const urgent = await via("$mq9.AI.MSG.FETCH.pg.box", {
          group_name: "g",
          deliver: "earliest",
          config: { num_msgs: 1, max_wait_ms: 0 },
        });
        expect(payloads(urgent)).toEqual(["m1"]);
        const [{ msg_id }] = urgent.messages as { msg_id: number }[];
        expect(await via("$mq9.AI.MSG.ACK.pg.box", { group_name: "g", msg_id })).toEqual({ error: "" });
        expect(
          await via("$mq9.AI.AGENT.REGISTER", {
            name: "pg-translator",
            mailbox: "pg.box",
            payload: "translates documents kept in PostgreSQL",
            tags: ["language"],
          }),
        ).toEqual({ error: "" });
      });
      await stop(first);

      // Nothing is kept on local disk (--data is refused): whatever it knows came from PostgreSQL.
      const second = await spawnServe(flags);
      await withClient(second, async (via) => {
        const rest = await via("$mq9.AI.MSG.FETCH.pg.box", { group_name: "g", config: { max_wait_ms: 0 } });
        expect(payloads(rest)).toEqual(["m0", "m2"]);
        const found = await via("$mq9.AI.AGENT.DISCOVER", { tags: ["language"] });
        expect((found.agents as { name: string }[]).map((agent) => agent.name)).toEqual(["pg-translator"]);
      });
      await stop(second);
    });

    it("a role out of connections: the start names the limit and what to change", async () => {
      const database = new URL(db.pg.url).pathname.slice(1);
      await db.pg.query("CREATE ROLE mq9_none LOGIN CONNECTION LIMIT 0");
      await db.pg.query(`GRANT CREATE ON DATABASE ${database} TO mq9_none`);
      const url = db.pg.url.replace("postgres@", "mq9_none@");
      const none = await runCli(["serve", "--postgres", url, "--port", "0", "--http-port", "0"]);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(
        'has no connection left for mq9 (too many connections for role "mq9_none")',
      );
      expect(none.stderr).toContain("lower --postgres-pool, or raise max_connections");
    });

    it("refuses an unreachable database, cluster settings without --cluster and SQLite settings, saying why", async () => {
      const unreachable = await runCli([
        "serve",
        "--postgres",
        "postgres://mq9@127.0.0.1:1/mq9",
        "--port",
        "0",
        "--http-port",
        "0",
      ]);
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr).toMatch(/cannot open the PostgreSQL store.*127\.0\.0\.1:1\/mq9/);
      // It stops at start, so it does not promise to retry.
      expect(unreachable.stderr).toContain("then start the broker again");
      expect(unreachable.stderr).not.toContain("retries by itself");
      const socketFolder = tempDir();
      const noSocket = await runCli([
        "serve",
        "--postgres",
        `postgres://mq9@/mq9?host=${socketFolder}`,
        "--port",
        "0",
        "--http-port",
        "0",
      ]);
      expect(noSocket.code).toBe(1);
      expect(noSocket.stderr).toContain(`PostgreSQL at ${socketFolder}/mq9 is unavailable`);
      const natsAlone = await runCli(["serve", "--nats", "nats://127.0.0.1:4222", "--port", "0"]);
      expect(natsAlone.code).toBe(2);
      expect(natsAlone.stderr).toContain("--nats is the NATS cluster of a cluster node: add --cluster");
      const nodeFlags = await runCli([
        "serve",
        "--postgres",
        db.pg.url,
        "--nats-token",
        "s3cret",
        "--port",
        "0",
      ]);
      expect(nodeFlags.code).toBe(2);
      expect(nodeFlags.stderr).toContain("--nats-token is a cluster node's setting: add --cluster");
      const advertised = await runCli(["serve", "--postgres", db.pg.url, "--port", "0"], {
        MQ9_NODE_HTTP_URL: "http://n1.example:8332",
      });
      expect(advertised.code).toBe(2);
      expect(advertised.stderr).toContain("--node-http-url is a cluster node's setting: add --cluster");
      // The SQLite store's settings would be ignored on PostgreSQL: both named, from flag or environment.
      const sqliteOnly = await runCli(
        ["serve", "--postgres", db.pg.url, "--data", tempDir(), "--message-cache-bytes", "0", "--port", "0"],
        {
          MQ9_STORAGE_SYNC: "full",
        },
      );
      expect(sqliteOnly.code).toBe(2);
      expect(sqliteOnly.stderr).toContain("--data is the SQLite store's folder: with --postgres");
      expect(sqliteOnly.stderr).toContain("--sync sets how the SQLite store flushes");
      expect(sqliteOnly.stderr).toContain("set by MQ9_STORAGE_SYNC=full");
      expect(sqliteOnly.stderr).toContain("--message-cache-bytes sizes the SQLite store's cache");
    });
  },
);
