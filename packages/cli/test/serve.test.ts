import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { connect } from "nats";
import { describe, expect, it } from "vitest";
import { loadServeConfig } from "../src/serve/config.js";
import { runCli, spawnServe, tempDir } from "./cli-harness.js";

describe("mq9 serve", () => {
  it("serves mq9 requests and shuts down cleanly on SIGTERM, keeping the data", async () => {
    const data = tempDir();
    const serve = await spawnServe(["--data", data]);
    const nc = await connect({ servers: `127.0.0.1:${serve.port}` });
    const reply = await nc.request(Subjects.mailboxCreate, new TextEncoder().encode('{"name":"cli.box"}'));
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toEqual({ error: "", mail_address: "cli.box" });
    await nc.close();
    serve.child.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    const again = await spawnServe(["--data", data]);
    const nc2 = await connect({ servers: `127.0.0.1:${again.port}` });
    const dup = await nc2.request(Subjects.mailboxCreate, new TextEncoder().encode('{"name":"cli.box"}'));
    expect(JSON.parse(new TextDecoder().decode(dup.data)).error).toBe("mailbox cli.box already exists");
    await nc2.close();
    again.child.kill("SIGINT");
    expect(await again.exited).toBe(0);
  });

  it("says in one line that the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    const result = await runCli(["serve", "--port", String(port), "--data", tempDir()]);
    blocker.close();
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `mq9: port ${port} on 127.0.0.1 is already in use; stop the other process or pass --port`,
    );
  });

  it("says in one line that the data directory is not writable", async () => {
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "not a directory");
    const result = await runCli(["serve", "--port", "0", "--http-port", "0", "--data", join(file, "data")]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/not writable.*--data/);
  });

  it("refuses a second broker on the same data directory", async () => {
    const data = tempDir();
    const first = await spawnServe(["--data", data]);
    const result = await runCli(["serve", "--port", "0", "--http-port", "0", "--data", data]);
    first.child.kill("SIGTERM");
    await first.exited;
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/in use by another mq9 broker/);
  });

  it("rejects bad settings with a clear message and exit code 2", async () => {
    const bad = await runCli(["serve", "--port", "http"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--port must be a number, got 'http'");
    const sync = await runCli(["serve"], { MQ9_STORAGE_SYNC: "sometimes" });
    expect(sync.code).toBe(2);
    expect(sync.stderr).toContain("storage.sync");
  });

  it("runs the registry's embedder on --registry-embedder-workers threads, and refuses 0", async () => {
    const serve = await spawnServe([
      "--data",
      tempDir(),
      "--orchestrator",
      "off",
      "--registry-embedder-workers",
      "3",
    ]);
    const line = serve
      .stdout()
      .split("\n")
      .find((l) => l.includes("worker threads"));
    serve.child.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    expect(JSON.parse(line!).msg).toMatch(
      /^agent registry: embedder onnx:.*all-MiniLM-L6-v2-int8:mean on 3 worker threads$/,
    );
    const zero = await runCli(["serve", "--data", tempDir()], { MQ9_REGISTRY_EMBEDDER_WORKERS: "0" });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toBe(
      "mq9: invalid configuration: registry.embedderWorkers: must be a whole number above 0 (set by MQ9_REGISTRY_EMBEDDER_WORKERS=0)\n",
    );
  });

  it("prints help with examples", async () => {
    const help = await runCli(["serve", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--data <value>");
    expect(help.stdout).toContain("Examples:");
  });
});

describe("configuration", () => {
  it("merges file, then MQ9_* env, then flags (flags win), with defaults for the rest", () => {
    const file = join(tempDir(), "mq9.json");
    writeFileSync(
      file,
      JSON.stringify({ server: { port: 1111, host: "0.0.0.0" }, storage: { sync: "full" } }),
    );
    const config = loadServeConfig({
      file,
      env: { MQ9_PORT: "2222", MQ9_DATA: "/tmp/envdata" },
      flags: { port: "3333" },
    });
    expect(config.server).toMatchObject({ port: 3333, host: "0.0.0.0", maxPayload: 1024 * 1024 });
    expect(config.storage).toEqual({
      data: "/tmp/envdata",
      sync: "full",
      messageCacheBytes: 64 * 1024 * 1024,
    });
    expect(loadServeConfig({ env: {} }).server.port).toBe(4332);
  });

  it("selects the registry's vector store from the file, MQ9_REGISTRY_VECTOR_STORE or --registry-vector-store", () => {
    const file = join(tempDir(), "mq9.json");
    writeFileSync(file, JSON.stringify({ registry: { vectorStore: "lancedb" } }));
    expect(loadServeConfig({ env: {} }).registry.vectorStore).toBe("local");
    expect(loadServeConfig({ file }).registry.vectorStore).toBe("lancedb");
    expect(loadServeConfig({ env: { MQ9_REGISTRY_VECTOR_STORE: "lancedb" } }).registry.vectorStore).toBe(
      "lancedb",
    );
    expect(loadServeConfig({ file, flags: { registryVectorStore: "local" } }).registry.vectorStore).toBe(
      "local",
    );
    expect(() => loadServeConfig({ flags: { registryVectorStore: "faiss" } })).toThrow(
      /registry.vectorStore: Invalid option: expected one of "local"\|"lancedb"/,
    );
  });

  it("names the unknown key, the bad value and the unreadable file", () => {
    const dir = tempDir();
    const unknown = join(dir, "unknown.json");
    writeFileSync(unknown, JSON.stringify({ server: { prot: 1 } }));
    expect(() => loadServeConfig({ file: unknown })).toThrow(
      "server: unknown key 'prot'; did you mean 'port'?",
    );
    writeFileSync(unknown, JSON.stringify({ orchestrator: { pollBach: 3, zzz: 1 } }));
    expect(() => loadServeConfig({ file: unknown })).toThrow(
      "orchestrator: unknown key 'pollBach'; did you mean 'pollBatch'?; orchestrator: unknown key 'zzz'",
    );
    const broken = join(dir, "broken.json");
    writeFileSync(broken, "{ nope");
    expect(() => loadServeConfig({ file: broken })).toThrow(/is not valid JSON/);
    expect(() => loadServeConfig({ file: join(dir, "missing.json") })).toThrow(/cannot read config file/);
    expect(() => loadServeConfig({ flags: { tlsCert: "c.pem" } })).toThrow(
      /tls.cert and tls.key must be given together/,
    );
  });

  it("refuses a --postgres that is not a postgres:// URL, and never prints a secret it refuses", () => {
    // pg would read "localhost/mq9" as a path on a made-up host and fail at connect, obscurely.
    expect(() => loadServeConfig({ flags: { postgres: "localhost/mq9" } })).toThrow(
      "cluster.postgres: must be a postgres:// URL, like postgres://mq9:secret@db:5432/mq9",
    );
    for (const url of [
      "postgres://mq9@/mq9?host=/var/run/postgresql",
      "postgresql://mq9:pw@db:5432/mq9?sslmode=require",
    ]) {
      expect(loadServeConfig({ flags: { postgres: url } }).cluster.postgres).toBe(url);
    }
    const misspelt = () => loadServeConfig({ env: { MQ9_POSTGRES: "postgress://mq9:hunter2@db/mq9" } });
    expect(misspelt).toThrow("(set by MQ9_POSTGRES=postgress://mq9:***@db/mq9)");
    expect(misspelt).not.toThrow(/hunter2/);
    const atSign = () => loadServeConfig({ flags: { postgres: "postgress://mq9:p@ss@db/mq9" } });
    expect(atSign).toThrow("(set by --postgres postgress://mq9:***@db/mq9)");
    const emptyPassword = () => loadServeConfig({ flags: { user: "ops", password: "" } });
    expect(emptyPassword).toThrow("(set by --password (hidden))");
    const nodeToken = () => loadServeConfig({ flags: { natsToken: "s3cret" } });
    expect(nodeToken).toThrow("--nats-token is a cluster node's setting");
    expect(nodeToken).not.toThrow(/s3cret/);
  });

  it("a cluster node with a secured NATS side refuses an open HTTP API unless told so", () => {
    const node = { cluster: "on", nats: "nats://n1:4222", postgres: "postgres://mq9@db/mq9" };
    const open =
      /its HTTP API would be open: .*Give it --token \(or auth\.users with an admin\), or pass --http-without-auth/;
    for (const secured of [
      { natsUser: "mq9-a", natsPassword: "pw" },
      { natsToken: "t0ken" },
      { natsCreds: "/etc/mq9/node.creds" },
      { clusterIdentity: "account-prefix", natsUser: "mq9-node", natsPassword: "pw" },
    ]) {
      expect(() => loadServeConfig({ flags: { ...node, ...secured } }), JSON.stringify(secured)).toThrow(
        open,
      );
      expect(loadServeConfig({ flags: { ...node, ...secured, token: "http-token" } }).cluster.enabled).toBe(
        true,
      );
      const withoutAuth = loadServeConfig({ flags: { ...node, ...secured, httpWithoutAuth: "on" } });
      expect(withoutAuth.cluster.httpWithoutAuth).toBe(true);
    }
    // A NATS side without credentials stays as before: nothing to protect that HTTP would open.
    expect(loadServeConfig({ flags: node }).cluster.httpWithoutAuth).toBe(false);
    expect(() => loadServeConfig({ flags: { ...node, clusterAdmins: "ops" } })).toThrow(
      "--cluster-admins names accounts of --cluster-identity account-prefix",
    );
    expect(() =>
      loadServeConfig({ flags: { ...node, clusterIdentity: "account-prefix", token: "t" } }),
    ).toThrow("--cluster-identity account-prefix needs the node's own NATS user");
    const prefixed = loadServeConfig({
      flags: {
        ...node,
        clusterIdentity: "account-prefix",
        clusterAdmins: "ops,audit",
        natsUser: "mq9-node",
        natsPassword: "pw",
        token: "t",
      },
    });
    expect(prefixed.cluster.admins).toEqual(["ops", "audit"]);
    expect(() => loadServeConfig({ flags: { clusterIdentity: "account-prefix" } })).toThrow(
      "--cluster-identity is a cluster node's setting",
    );
  });

  it("the system-account user that drops hung nodes: file, env or flags, one way to log in, a bound past missing", () => {
    const node = { cluster: "on", nats: "nats://n1:4222", postgres: "postgres://mq9@db/mq9" };
    expect(loadServeConfig({ flags: node }).cluster).toMatchObject({ dropMissingAfterS: 20 });
    expect(loadServeConfig({ flags: node }).cluster.natsSystemUser).toBeUndefined();
    const file = join(tempDir(), "mq9.json");
    writeFileSync(file, JSON.stringify({ cluster: { natsSystemUser: "sys", dropMissingAfterS: 30 } }));
    const fromFile = loadServeConfig({ file, env: { MQ9_NATS_SYSTEM_PASSWORD: "pw" }, flags: node });
    expect(fromFile.cluster).toMatchObject({
      natsSystemUser: "sys",
      natsSystemPassword: "pw",
      dropMissingAfterS: 30,
    });
    const fromEnv = loadServeConfig({
      env: { MQ9_NATS_SYSTEM_CREDS: "/etc/mq9/sys.creds", MQ9_DROP_MISSING_AFTER: "12" },
      flags: node,
    });
    expect(fromEnv.cluster).toMatchObject({ natsSystemCreds: "/etc/mq9/sys.creds", dropMissingAfterS: 12 });
    expect(() => loadServeConfig({ flags: { ...node, dropMissingAfter: "6" } })).toThrow(
      "--drop-missing-after must be more than 6 s",
    );
    expect(() => loadServeConfig({ flags: { ...node, natsSystemPassword: "hush" } })).toThrow(
      "--nats-system-password is the password of --nats-system-user",
    );
    expect(() => loadServeConfig({ flags: { ...node, natsSystemPassword: "hush" } })).not.toThrow(/hush/);
    expect(() =>
      loadServeConfig({ flags: { ...node, natsSystemUser: "sys", natsSystemCreds: "/etc/mq9/sys.creds" } }),
    ).toThrow("--nats-system-user and --nats-system-creds are two ways");
    expect(() => loadServeConfig({ flags: { natsSystemUser: "sys" } })).toThrow(
      "--nats-system-user is a cluster node's setting",
    );
  });
});
