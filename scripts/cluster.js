#!/usr/bin/env node
// `npm run cluster:up` / `npm run cluster:down`: a whole mq9 cluster on this machine — three
// nats-servers joined by routes, a private PostgreSQL (initdb in .mq9-cluster/), three
// `mq9 serve --cluster` nodes — running in the background until cluster:down. State, data and
// logs live in .mq9-cluster/ of the current directory (MQ9_CLUSTER_DIR to choose another).
// `cluster:up -- --secured`: the nodes in a NATS account of their own, users alice, bob and ops
// each in theirs (docs/cluster.md, "One NATS account per user"), the nodes' HTTP API behind a token,
// and a system-account user with which the nodes drop a hung node (nats-server 2.10.0 or newer).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { MQ9_CLI, startMq9Node } from "./local-cluster/mq9-node.js";
import { startNatsCluster } from "./local-cluster/nats-cluster.js";
import { startPrivatePostgres } from "./local-cluster/private-postgres.js";
import { securedNatsConfig } from "./local-cluster/secured-nats-config.js";

const dir = resolve(process.env.MQ9_CLUSTER_DIR ?? ".mq9-cluster");
const stateFile = join(dir, "state.json");
const NODES = Number(process.env.MQ9_CLUSTER_NODES ?? 3);
const SECURED = process.argv.includes("--secured");

const secret = () => randomBytes(18).toString("base64url");

/**
 * The secured variant's credentials: the nodes' NATS user, one user per account (its name is the
 * prefix the nodes read as the requester; ops is the nodes' --cluster-admins), the HTTP token, and
 * the system-account user the nodes close a hung node's connection with.
 */
function securedSetup() {
  return {
    node: { user: "mq9-node", password: secret() },
    users: ["alice", "bob", "ops"].map((name) => ({ account: name, user: name, password: secret() })),
    httpToken: secret(),
    system: { user: "mq9-system", password: secret() },
  };
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopPid(pid, what) {
  if (!pid || !alive(pid)) return;
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) process.kill(pid, "SIGKILL");
  process.stdout.write(`stopped ${what} (pid ${pid})\n`);
}

/**
 * Whether the postgres OS user (PostgreSQL's, when we are root) can reach files in `folder`: a
 * checkout under /root (mode 700) is not reachable to it.
 */
function postgresCanEnter(folder) {
  if (process.getuid?.() !== 0) return true;
  try {
    execFileSync("runuser", ["-u", "postgres", "--", "test", "-x", folder], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function up() {
  if (existsSync(stateFile)) {
    process.stderr.write(`a cluster is already up (${stateFile}); run npm run cluster:down first\n`);
    process.exit(1);
  }
  if (!existsSync(MQ9_CLI)) {
    process.stderr.write("the CLI is not built: run npm run build first\n");
    process.exit(1);
  }
  mkdirSync(dir, { recursive: true });
  const pgDir = postgresCanEnter(dir) ? dir : tmpdir();
  if (pgDir !== dir)
    process.stdout.write(
      `PostgreSQL runs as the postgres OS user, which cannot enter ${dir}: its data goes to ${pgDir}\n`,
    );
  const secured = SECURED ? securedSetup() : undefined;
  const natsConfig = secured
    ? securedNatsConfig({ nodes: [secured.node], users: secured.users, system: secured.system })
    : undefined;
  const [nats, pg] = await Promise.all([
    startNatsCluster({ size: 3, logDir: dir, tmpDir: dir, keep: true, config: natsConfig }),
    startPrivatePostgres({ tmpDir: pgDir, keep: true, fsync: true }),
  ]);
  const state = {
    nats: nats.servers.map((s) => ({ name: s.name, url: s.url, pid: s.pid })),
    postgres: { url: pg.url, dataDir: pg.dataDir, bin: pg.bin },
    nodes: [],
  };
  writeFileSync(stateFile, JSON.stringify(state, null, 2));
  // For a shell: `. .mq9-cluster/env` points the mq9 CLI (and MQ9_POSTGRES users) at this cluster.
  const env = [`export MQ9_SERVER=${nats.urls[0]}`, `export MQ9_POSTGRES=${pg.url}`];
  if (secured) {
    // The NATS side's credentials are each user's (alice.env…); `env` is the operator's HTTP side.
    env.push("unset MQ9_USER MQ9_PASSWORD", `export MQ9_TOKEN=${secured.httpToken}`);
    for (const u of secured.users) {
      const lines = [
        `export MQ9_SERVER=${nats.urls[0]}`,
        `export MQ9_USER=${u.user}`,
        `export MQ9_PASSWORD=${u.password}`,
      ];
      writeFileSync(join(dir, `${u.user}.env`), `${[...lines, "unset MQ9_TOKEN"].join("\n")}\n`, {
        mode: 0o600,
      });
    }
  }
  writeFileSync(join(dir, "env"), `${env.join("\n")}\n`, { mode: 0o600 });
  // Secrets go to the nodes by environment, not on their command lines (which ps shows).
  const securedEnv = secured
    ? {
        MQ9_NATS_USER: secured.node.user,
        MQ9_NATS_PASSWORD: secured.node.password,
        MQ9_CLUSTER_IDENTITY: "account-prefix",
        MQ9_CLUSTER_ADMINS: "ops",
        MQ9_TOKEN: secured.httpToken,
        MQ9_NATS_SYSTEM_USER: secured.system.user,
        MQ9_NATS_SYSTEM_PASSWORD: secured.system.password,
      }
    : {};
  for (let i = 0; i < NODES; i++) {
    const nodeId = String.fromCharCode(97 + i);
    // Each node starts at "its" server; the client fails over to the others.
    const urls = [...nats.urls.slice(i % 3), ...nats.urls.slice(0, i % 3)];
    const node = await startMq9Node({
      nodeId,
      nats: urls,
      postgres: pg.url,
      dataDir: join(dir, `node-${nodeId}`),
      logFile: join(dir, `node-${nodeId}.log`),
      args: process.env.MQ9_CLUSTER_ARGS ? process.env.MQ9_CLUSTER_ARGS.split(" ") : [],
      env: securedEnv,
    });
    state.nodes.push({ nodeId, pid: node.pid, http: `http://127.0.0.1:${node.httpPort}` });
    writeFileSync(stateFile, JSON.stringify(state, null, 2));
  }
  // Node a's HTTP server: the CLI's --http (mq9 task …), and curl $MQ9_HTTP/api/v1/cluster.
  writeFileSync(join(dir, "env"), `${[...env, `export MQ9_HTTP=${state.nodes[0].http}`].join("\n")}\n`);
  process.stdout.write(
    [
      `mq9 cluster is up${secured ? " (secured: one NATS account per user, HTTP behind a token)" : ""}:`,
      `  NATS (clients connect here): ${nats.urls.join(",")}`,
      ...(secured
        ? [
            `  users: alice, bob, ops (an admin): . ${join(dir, "alice.env")} (and bob.env, ops.env) to act as one`,
            "  hung nodes: the nodes drop one as the system account's mq9-system (nats-server 2.10.0 or newer; MQ9_NATS_SERVER picks the binary, an older one makes them log what to do)",
          ]
        : []),
      `  PostgreSQL: ${pg.url}`,
      ...state.nodes.map((n) => `  node ${n.nodeId}: ${n.http}/healthz (pid ${n.pid})`),
      `  logs and data: ${dir} (. ${join(dir, "env")} sets MQ9_SERVER and MQ9_HTTP for the mq9 CLI)`,
      "  stop it with: npm run cluster:down",
      "",
    ].join("\n"),
  );
  process.exit(0);
}

async function down() {
  if (!existsSync(stateFile)) {
    process.stdout.write(`no cluster is up (${stateFile} is missing)\n`);
    return;
  }
  const state = JSON.parse(readFileSync(stateFile, "utf8"));
  for (const node of state.nodes ?? []) await stopPid(node.pid, `mq9 node ${node.nodeId}`);
  for (const server of state.nats ?? []) await stopPid(server.pid, `nats-server ${server.name}`);
  if (state.postgres?.dataDir) {
    const asPostgres = process.getuid?.() === 0 ? ["-u", "postgres", "--"] : undefined;
    const pgCtl = join(state.postgres.bin, "pg_ctl");
    const args = ["stop", "-w", "-m", "fast", "-D", state.postgres.dataDir];
    try {
      if (asPostgres) execFileSync("runuser", [...asPostgres, pgCtl, ...args], { stdio: "ignore" });
      else execFileSync(pgCtl, args, { stdio: "ignore" });
      process.stdout.write("stopped PostgreSQL\n");
    } catch {
      process.stdout.write("PostgreSQL was not running\n");
    }
  }
  // Its data went elsewhere when the postgres user could not enter the folder (see up()).
  if (state.postgres?.dataDir && !resolve(state.postgres.dataDir).startsWith(`${dir}/`))
    rmSync(dirname(state.postgres.dataDir), { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`removed ${dir}\n`);
}

const command = process.argv[2];
if (command === "up") await up();
else if (command === "down") await down();
else {
  process.stderr.write("usage: node scripts/cluster.js up [--secured] | down\n");
  process.exit(2);
}
