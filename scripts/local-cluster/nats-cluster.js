// A NATS cluster on loopback for tests, benchmarks and `npm run cluster:up`: n nats-servers joined
// by routes, each with its client port, route port and monitoring port, optionally JetStream.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts } from "./free-port.js";

const CANDIDATES = [
  process.env.MQ9_NATS_SERVER,
  "/usr/sbin/nats-server",
  "/usr/local/bin/nats-server",
  "/usr/bin/nats-server",
];

/** The nats-server binary, or undefined when it is not installed. */
export function findNatsServer() {
  return CANDIDATES.filter(Boolean).find((file) => existsSync(file));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function routesUp(monitorPort, want) {
  try {
    const res = await fetch(`http://127.0.0.1:${monitorPort}/routez`);
    const body = await res.json();
    return body.num_routes >= want;
  } catch {
    return false;
  }
}

/**
 * Starts `size` routed nats-servers (default 3). Options: bin (another nats-server binary), jetstream (file storage in a temp dir),
 * config (nats-server config text for every server, e.g. tls and authorization blocks),
 * name (cluster name), tmpDir, logDir (detached servers that log there and outlive this process). Returns { servers: [{ url, port, pid, stop(), kill(), start() }], urls,
 * stop() }; each server can be killed (SIGKILL) and started again on the same ports.
 */
export async function startNatsCluster(options = {}) {
  const bin = options.bin ?? findNatsServer();
  if (!bin)
    throw new Error("nats-server is not installed: apt-get install nats-server, or set MQ9_NATS_SERVER");
  const size = options.size ?? 3;
  const root = mkdtempSync(join(options.tmpDir ?? tmpdir(), "mq9-nats-"));
  const picked = await freePorts(size * 3);
  const ports = Array.from({ length: size }, (_, i) => ({
    client: picked[3 * i],
    route: picked[3 * i + 1],
    monitor: picked[3 * i + 2],
  }));
  const routes = ports.map((p) => `nats://127.0.0.1:${p.route}`).join(",");
  const name = options.name ?? "mq9";
  // Settings the flags have none for (tls, authorization): one config file for every server.
  const configFile = join(root, "nats-server.conf");
  if (options.config) writeFileSync(configFile, options.config);
  const servers = ports.map((p, i) => {
    const args = [
      ...(options.config ? ["-c", configFile] : []),
      "-a",
      "127.0.0.1",
      "-p",
      String(p.client),
      "-m",
      String(p.monitor),
      "-n",
      `${name}-n${i + 1}`,
      "--cluster_name",
      name,
      "--cluster",
      `nats://127.0.0.1:${p.route}`,
      "--routes",
      routes,
    ];
    if (options.jetstream) args.push("-js", "-sd", join(root, `js-${i + 1}`));
    let child;
    let output = "";
    const server = {
      name: `n${i + 1}`,
      port: p.client,
      monitorPort: p.monitor,
      url: `nats://127.0.0.1:${p.client}`,
      get pid() {
        return child?.pid;
      },
      output: () => output,
      /** Starts (again) on the same ports. */
      start() {
        if (options.logDir) {
          // Outlives this process (npm run cluster:up): output to a file, not a pipe.
          const log = openSync(join(options.logDir, `nats-n${i + 1}.log`), "a");
          child = spawn(bin, args, { stdio: ["ignore", log, log], detached: true });
          child.unref();
        } else {
          child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
          const keep = (chunk) => {
            output = (output + chunk.toString()).slice(-32_000);
          };
          child.stdout.on("data", keep);
          child.stderr.on("data", keep);
        }
        server.exited = new Promise((resolve) => child.once("exit", resolve));
      },
      /** SIGKILL, as a crash. */
      async kill() {
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGKILL");
        await server.exited;
      },
      async stop() {
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await server.exited;
        clearTimeout(timer);
      },
    };
    return server;
  });
  for (const server of servers) server.start();
  const deadline = Date.now() + 30_000;
  for (const server of servers) {
    while (!(await routesUp(server.monitorPort, size - 1))) {
      if (Date.now() > deadline) {
        await Promise.all(servers.map((s) => s.kill()));
        const said = servers.map((s) => `${s.name}: ${s.output().slice(-1500)}`).join("\n");
        throw new Error(`the NATS cluster did not form within 30 s:\n${said}`);
      }
      await sleep(100);
    }
  }
  return {
    servers,
    urls: servers.map((s) => s.url),
    /** Waits until every running server has its routes to the other running ones. */
    async waitForRoutes(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (const server of servers) {
        while (!(await routesUp(server.monitorPort, size - 1))) {
          if (Date.now() > until) throw new Error(`routes of ${server.name} did not come back`);
          await sleep(100);
        }
      }
    },
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
      if (!options.keep) rmSync(root, { recursive: true, force: true });
    },
  };
}
