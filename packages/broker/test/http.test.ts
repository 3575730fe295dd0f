import { Subjects } from "@mq9/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestBroker, type TestBroker } from "./harness.js";

describe("broker HTTP server", () => {
  let t: TestBroker;
  let base: string;
  beforeAll(async () => {
    t = await startTestBroker({
      http: {
        port: 0,
        routes: (app) => {
          app.get("/extra", async () => ({ mounted: true }));
        },
      },
    });
    base = `http://127.0.0.1:${t.broker.http!.port}`;
  });
  afterAll(() => t.close());

  it("/healthz answers ok with the connection count", async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", ok: true, connections: 1, storage: "ok" });
  });

  it("/metrics counts mq9 requests by operation and outcome in Prometheus text format", async () => {
    await t.request(Subjects.mailboxCreate, { name: "metrics.box" });
    await t.request(Subjects.send("metrics.box"), "x");
    await t.request(Subjects.send("no.box"), "x");
    const res = await fetch(`${base}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('mq9_requests_total{op="msg.send",outcome="ok"} 1');
    expect(text).toContain('mq9_requests_total{op="msg.send",outcome="error"} 1');
    expect(text).toContain('mq9_requests_total{op="mailbox.create",outcome="ok"} 1');
    expect(text).toContain("mq9_client_connections 1");
    expect(text).toMatch(/mq9_request_duration_seconds_bucket\{le="0.001",op="msg.send"\} \d/);
    // Buckets are cumulative and end at +Inf with every request of the operation, ok or not.
    const buckets = [
      ...text.matchAll(/^mq9_request_duration_seconds_bucket\{le="([^"]+)",op="msg.send"\} (\d+)$/gm),
    ];
    expect(buckets.map((m) => m[1])).toEqual([
      ...["0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.05", "0.25", "1", "5"],
      "+Inf",
    ]);
    const counts = buckets.map((m) => Number(m[2]));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.at(-1)).toBe(2);
    expect(text).toContain('mq9_request_duration_seconds_count{op="msg.send"} 2');
    const sum = Number(/^mq9_request_duration_seconds_sum\{op="msg.send"\} (\S+)$/m.exec(text)?.[1]);
    expect(sum).toBeGreaterThan(0);
    expect(text).toContain("# TYPE mq9_request_duration_seconds histogram");
    expect(text).toContain("# TYPE mq9_requests_total counter");
  });

  it("INFO tells NATS clients where the HTTP server is (mq9_http_port); without HTTP it says nothing", async () => {
    const nc = await t.nats();
    expect((nc.info as unknown as Record<string, unknown>).mq9_http_port).toBe(t.broker.http!.port);
    const bare = await startTestBroker();
    try {
      expect(bare.nc.info).toBeDefined();
      expect(Object.keys(bare.nc.info!)).not.toContain("mq9_http_port");
    } finally {
      await bare.close();
    }
  });

  it("/metrics has the standard process and Node.js metrics under mq9_, each prefixed once", async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const names = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    for (const name of [
      "mq9_process_cpu_user_seconds_total",
      "mq9_process_cpu_system_seconds_total",
      "mq9_process_resident_memory_bytes",
      "mq9_process_start_time_seconds",
      "mq9_nodejs_heap_size_used_bytes",
      "mq9_nodejs_eventloop_lag_seconds",
    ]) {
      expect(names, name).toContain(name);
    }
    expect(
      [...names].filter((name) => !name.startsWith("mq9_") || /^mq9_(\w+_)?mq9_|process_process_/.test(name)),
    ).toEqual([]);
  });

  it("/metrics shows the registry's background work", async () => {
    await t.request(Subjects.agentRegister, { name: "metrics.agent", mailbox: "metrics.agent.inbox" });
    const gauges = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Object.fromEntries(
        [...text.matchAll(/^(mq9_registry_\w+) (\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
      );
    };
    expect(Object.keys(await gauges()).sort()).toEqual([
      "mq9_registry_embedding",
      "mq9_registry_index_building",
      "mq9_registry_vector_points",
      "mq9_registry_vectors_indexed",
      "mq9_registry_vectors_unindexed",
    ]);
    await t.broker.registry!.indexed();
    // One skill vector, far below the approximate index's threshold: searched exactly.
    expect(await gauges()).toEqual({
      mq9_registry_embedding: 0,
      mq9_registry_vectors_unindexed: 1,
      mq9_registry_vectors_indexed: 0,
      mq9_registry_vector_points: 0,
      mq9_registry_index_building: 0,
    });
  });

  it("/metrics shows the message log and how far SQLite is behind it", async () => {
    const gauges = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Object.fromEntries(
        [...text.matchAll(/^(mq9_store_\w+) (\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
      );
    };
    const before = await gauges();
    expect(Object.keys(before).sort()).toEqual([
      "mq9_store_corrupt_records_total",
      "mq9_store_db_free_bytes",
      "mq9_store_log_bytes",
      "mq9_store_log_message_bytes",
      "mq9_store_log_segments",
      "mq9_store_reclaimable_bytes",
      "mq9_store_rows_waiting",
      "mq9_store_wal_bytes",
    ]);
    await t.request(Subjects.mailboxCreate, { name: "log.metrics" });
    await t.request(Subjects.send("log.metrics"), "x".repeat(1000));
    // A FETCH needs the row in SQLite: nothing waits after it.
    await t.request(Subjects.fetch("log.metrics"), { deliver: "earliest", config: { num_msgs: 1 } });
    const after = await gauges();
    expect(after.mq9_store_log_segments).toBeGreaterThanOrEqual(1);
    expect(after.mq9_store_log_message_bytes).toBeGreaterThanOrEqual(
      before.mq9_store_log_message_bytes + 1000,
    );
    expect(after.mq9_store_rows_waiting).toBe(0);
    expect(after.mq9_store_corrupt_records_total).toBe(0);
  });

  it("mounts the routes of higher layers", async () => {
    expect(await (await fetch(`${base}/extra`)).json()).toEqual({ mounted: true });
  });

  it("answers 404 with a JSON error for unknown paths", async () => {
    const res = await fetch(`${base}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toMatch(/not found/i);
  });
});

describe("broker HTTP server with the broker's credentials", () => {
  it("requires the token on every route but /healthz and /metrics", async () => {
    const t = await startTestBroker({
      auth: { token: "s3cret" },
      http: { port: 0, routes: (app) => void app.get("/extra", async () => ({ mounted: true })) },
    });
    try {
      const base = `http://127.0.0.1:${t.broker.http!.port}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/metrics`)).status).toBe(200);
      const refused = await fetch(`${base}/extra`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="mq9"');
      expect((await fetch(`${base}/extra`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
      const allowed = await fetch(`${base}/extra`, { headers: { authorization: "Bearer s3cret" } });
      expect(await allowed.json()).toEqual({ mounted: true });
    } finally {
      await t.close();
    }
  });

  it("accepts user and password as Basic credentials", async () => {
    const t = await startTestBroker({
      auth: { user: "agent", password: "pw" },
      http: { port: 0, routes: (app) => void app.get("/extra", async () => ({ mounted: true })) },
    });
    try {
      const url = `http://127.0.0.1:${t.broker.http!.port}/extra`;
      const basic = (s: string) => ({ authorization: `Basic ${Buffer.from(s).toString("base64")}` });
      expect((await fetch(url, { headers: basic("agent:nope") })).status).toBe(401);
      expect((await fetch(url, { headers: basic("agent:pw") })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
