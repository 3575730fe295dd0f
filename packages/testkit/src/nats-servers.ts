// Real nats-servers joined by routes (scripts/local-cluster/nats-cluster.js), typed for tests.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { repoRoot } from "./sample-agents.js";

export interface NatsServer {
  name: string;
  /** `nats://127.0.0.1:<port>` */
  url: string;
  port: number;
  monitorPort: number;
  /** Starts it again on the same ports. */
  start(): void;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export interface NatsServers {
  servers: NatsServer[];
  urls: string[];
  waitForRoutes(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface NatsServersOptions {
  /** How many routed servers (default 3). */
  size?: number;
  /** nats-server config text for every server (tls, authorization, limits). */
  config?: string;
  jetstream?: boolean;
  name?: string;
  /** Another nats-server binary than the system's (pinnedNatsServer()). */
  bin?: string;
}

/** One account per user (or team); `account` is the prefix the mq9 nodes read as the requester. */
export interface SecuredNatsUser {
  account: string;
  user: string;
  password: string;
}

/** The mq9 nodes' NATS users and the users' accounts of a secured cluster's nats-server config. */
export interface SecuredNatsOptions {
  nodes: { user: string; password: string }[];
  users: SecuredNatsUser[];
  /** A user of the system account `SYS`, for dropping hung nodes. */
  system?: { user: string; password: string };
}

interface SecuredConfigScript {
  securedNatsConfig(options: SecuredNatsOptions): string;
  systemAccountLines(system: { user: string; password: string }): string[];
}

interface NatsClusterScript {
  findNatsServer(): string | undefined;
  startNatsCluster(options: NatsServersOptions): Promise<NatsServers>;
}

// The script is plain JavaScript shared with the benchmarks and `npm run cluster:up`.
const script = (await import(
  pathToFileURL(join(repoRoot, "scripts/local-cluster/nats-cluster.js")).href
)) as NatsClusterScript;

const secured = (await import(
  pathToFileURL(join(repoRoot, "scripts/local-cluster/secured-nats-config.js")).href
)) as SecuredConfigScript;

/** The nats-server config of a secured mq9 cluster (docs/cluster.md, "One NATS account per user"). */
export function securedNatsConfig(options: SecuredNatsOptions): string {
  return secured.securedNatsConfig(options);
}

/**
 * A nats-server config with a system account (`SYS`) whose user may only ping the servers, look up
 * a connection and close it (docs/cluster.md, Hung nodes), and an application account every client
 * without credentials lands in.
 */
export function systemAccountNatsConfig(system: { user: string; password: string }): string {
  return [
    "accounts {",
    "  APP { users = [ { user: app, password: app } ] }",
    ...secured.systemAccountLines(system),
    "}",
    "system_account: SYS",
    "no_auth_user: app",
    "",
  ].join("\n");
}

/** Starts routed nats-servers on free ports and resolves once their routes are up. */
export function startNatsServers(options: NatsServersOptions = {}): Promise<NatsServers> {
  return script.startNatsCluster(options);
}

/** Why nats-server tests cannot run here, or undefined; with CI set a missing binary fails. */
export function natsServerMissing(): string | undefined {
  if (script.findNatsServer()) return undefined;
  const reason = "not installed: nats-server (apt-get install nats-server)";
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}

/**
 * Routed nats-server clusters, one per test cluster of brokers running at a time: two mq9
 * clusters on one NATS cluster would both answer every request, whatever their queue groups.
 * One is started when every one of that size started so far is in use, and serves the next
 * test cluster once it is free.
 */
export class NatsServerPool {
  private readonly started: { size: number; urls: string[]; stop(): Promise<void>; busy: boolean }[] = [];

  async take(size: number): Promise<{ urls: string[]; release(): void }> {
    let found = this.started.find((s) => !s.busy && s.size === size);
    if (!found) {
      found = { ...(await startNatsServers({ size })), size, busy: false };
      this.started.push(found);
    }
    const taken = found;
    taken.busy = true;
    return {
      urls: taken.urls,
      release: () => {
        taken.busy = false;
      },
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.started.map((s) => s.stop()));
  }
}
