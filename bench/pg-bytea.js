// `node bench/pg-bytea.js`: what returning 1 KiB bytea values costs through node-postgres, which
// takes results as text only (bytea arrives hex-encoded). Times a SELECT of 100 rows three ways on
// a private PostgreSQL (fsync off: nothing here commits): payload as bytea (hex text, parsed to a
// Buffer), as base64 text decoded in JS, and its length only (no payload on the wire). Also the JS
// hex decode alone. Figures only.
import { performance } from "node:perf_hooks";
import pg from "pg";
import { startPrivatePostgres } from "../scripts/local-cluster/private-postgres.js";

const ROWS = 100;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);

const server = await startPrivatePostgres();
const client = new pg.Client({ connectionString: server.url });
await client.connect();
try {
  await client.query("CREATE TABLE t (id int PRIMARY KEY, payload bytea NOT NULL)");
  await client.query(
    `INSERT INTO t SELECT i, decode(repeat(md5(i::text), 32), 'hex') FROM generate_series(1, ${ROWS}) i`,
  );
  const ways = {
    "bytea (hex text -> Buffer)": "SELECT id, payload FROM t ORDER BY id",
    "base64 text, decoded in JS": "SELECT id, encode(payload, 'base64') AS payload FROM t ORDER BY id",
    "length only (no payload)": "SELECT id, length(payload) AS payload FROM t ORDER BY id",
  };
  const decode = {
    "base64 text, decoded in JS": (rows) => rows.map((r) => Buffer.from(r.payload, "base64")),
  };
  const results = {};
  for (let pass = 0; pass < 2; pass++) {
    // Pass 0 warms up; pass 1 is reported. The ways alternate within a pass.
    const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, sql] of Object.entries(ways)) {
        const t0 = performance.now();
        const { rows } = await client.query({ text: sql, name });
        decode[name]?.(rows);
        times[name].push(performance.now() - t0);
      }
    }
    for (const [name, list] of Object.entries(times)) {
      list.sort((a, b) => a - b);
      results[name] = list[Math.floor(list.length / 2)];
    }
  }
  const hex = `\\x${Buffer.alloc(1024, 7).toString("hex")}`;
  const parse = pg.types.getTypeParser(pg.types.builtins.BYTEA);
  const t0 = performance.now();
  for (let i = 0; i < ROUNDS * ROWS; i++) parse(hex);
  const parseUs = ((performance.now() - t0) * 1000) / (ROUNDS * ROWS);
  console.log(`SELECT of ${ROWS} rows x 1 KiB, median of ${ROUNDS} (ms):`);
  for (const [name, ms] of Object.entries(results)) console.log(`  ${name}: ${ms.toFixed(3)}`);
  console.log(`node-postgres bytea parser alone: ${parseUs.toFixed(2)} us per 1 KiB value`);
} finally {
  await client.end();
  await server.stop();
}
