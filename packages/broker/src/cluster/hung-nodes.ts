import type { Logger } from "../logger.js";
import { connectionName } from "./cluster-connection.js";
import type { ClusterMember, ClusterMembers, NatsConnectionRef } from "./cluster-members.js";
import { KICK_SINCE, type KickOutcome, type SystemAccount } from "./system-account.js";

/** How long a node may go unheard before it is treated as hung, unless the options say otherwise. */
export const DROP_MISSING_AFTER_MS = 20_000;

export interface HungNodesOptions {
  /** Silence after which a node is treated as hung; never less than the missing threshold. */
  dropAfterMs: number;
  /** How often to look. */
  intervalMs: number;
  /** Without it the node only logs what the operator should do. */
  system?: SystemAccount;
  /**
   * Ends a node process's sessions on the shared database (by its instance): a hung node's
   * session keeps its once-per-cluster locks (expiry, the orchestrator…) for as long as it hangs.
   */
  endSessionsOf?: (instance: string) => Promise<number>;
  /** Whether this node is connected to NATS now: a node cut off hears no one and judges no one. */
  connected: () => boolean;
}

/**
 * The remedy for a hung node (SIGSTOP, a paused VM): nats-server keeps it in the queue group and
 * hands it its share of requests, which time out, until its connection closes. Once a node has
 * been silent for `dropAfterMs`, one node of the cluster (the first up node by id, so that the
 * others stay quiet) asks nats-server to close its connection, with a system-account user, or
 * logs how to. Each connection is dealt with once: a second close of it, by a node whose view
 * differed, finds it gone, and a node that resumes reconnects under a new client id.
 */
export class HungNodes {
  private timer?: NodeJS.Timeout;
  private checking = false;
  /** Connections this node acted on: `<instance> <server id> <client id>`. */
  private readonly handled = new Set<string>();
  /** When the last look ran, and since when this process has run without a pause. */
  private lastCheckMs?: number;
  private awakeSinceMs = Date.now();

  constructor(
    private readonly members: ClusterMembers,
    private readonly logger: Logger,
    private readonly options: HungNodesOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    this.awakeSinceMs = Date.now();
    this.timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Acts on every node silent for the bound, when this node is the one to act. */
  async check(now = Date.now()): Promise<void> {
    if (this.checking || !this.options.connected()) return;
    // A look far later than its interval means this process was paused itself (SIGSTOP, a
    // paused VM, a stalled event loop): every other node then looks silent, and only news heard
    // since it resumed counts.
    const pausedMs = Math.max(2 * this.options.intervalMs, this.options.dropAfterMs / 4);
    if (this.lastCheckMs !== undefined && now - this.lastCheckMs > pausedMs) {
      this.awakeSinceMs = now;
    }
    this.lastCheckMs = now;
    this.checking = true;
    try {
      const nodes = this.members.list(now);
      this.forgetHeard(nodes);
      if (actorOf(nodes) !== nodes[0]) return;
      for (const node of nodes) {
        const silentMs = Math.min(node.last_heard_ms, now - this.awakeSinceMs);
        if (node.self || silentMs < this.options.dropAfterMs) continue;
        const ref = node.nats_connection;
        const key = `${node.instance} ${ref?.server_id} ${ref?.client_id}`;
        if (this.handled.has(key)) continue;
        this.handled.add(key);
        const owner = ref
          ? nodes.find((n) => n.state === "up" && sameConnection(n.nats_connection, ref))
          : undefined;
        if (owner) {
          this.logger.error(
            `node ${node.node} is silent, but the NATS connection its news named (client id ${ref?.client_id} on server ${ref?.server_id}) is node ${owner.node}'s, which is up: left alone (forged presence news? keep _mq9.cluster.> to the nodes' NATS users)`,
          );
          continue;
        }
        await this.act(node, ref);
      }
    } finally {
      this.checking = false;
    }
  }

  private async act(node: ClusterMember, ref: NatsConnectionRef | null): Promise<void> {
    const heard = Math.round(node.last_heard_ms / 1000);
    const bound = Math.round(this.options.dropAfterMs / 1000);
    const silent = `node ${node.node} looks hung: not heard for ${heard} s (--drop-missing-after ${bound} s)`;
    await this.endSessions(node);
    const system = this.options.system;
    if (!system || !ref) {
      const without = system ? " (it did not tell its connection's id: an older mq9?)" : "";
      this.logger.warn(`${silent}${without}: ${advice(node, ref, system !== undefined)}`);
      return;
    }
    // The name a node's connection has, not the one its news claims: news can be forged.
    const name = connectionName(node.node, "broker");
    const outcome: KickOutcome = await system.kick(ref.server_id, ref.client_id, name);
    const connection = describe(node, ref);
    if (outcome.kind === "dropped") {
      this.logger.warn(
        `${silent}: dropped its NATS connection (${connection}) as hung, so the nats-servers stop handing it requests; if it resumes, it reconnects and rejoins`,
      );
    } else if (outcome.kind === "refused") {
      this.logger.error(`${silent}: ${outcome.why}`);
    } else if (outcome.kind === "gone") {
      this.logger.info(`${silent}: its NATS connection (${connection}) is closed already (${outcome.why})`);
    } else {
      this.logger.warn(
        `${silent}: could not drop its NATS connection (${connection}): ${outcome.why}; ${advice(node, ref, true)}`,
      );
    }
  }

  /**
   * Frees what the node holds on the database, whether or not its NATS connection can be closed:
   * its once-per-cluster work moves to another node (a dead node's sessions are gone already).
   */
  private async endSessions(node: ClusterMember): Promise<void> {
    if (!this.options.endSessionsOf) return;
    const whose = `hung node ${node.node} (${node.instance})`;
    try {
      const ended = await this.options.endSessionsOf(node.instance);
      if (ended === 0) return;
      const duties = node.duties.length > 0 ? `: ${node.duties.join(", ")} move to another node` : "";
      this.logger.warn(
        `ended the ${ended} PostgreSQL session${ended === 1 ? "" : "s"} of ${whose}, so its once-per-cluster locks are free${duties}; if it resumes, it connects again`,
      );
    } catch (err) {
      this.logger.error(
        `could not end the PostgreSQL sessions of ${whose}: ${(err as Error).message}; its once-per-cluster work (${node.duties.join(", ") || "none now"}) waits until it resumes or is stopped (nodes end each other's sessions as the same PostgreSQL role, or with pg_signal_backend)`,
      );
    }
  }

  /**
   * Keeps `handled` to the nodes still listed and silent: a node heard again since it was acted
   * on is acted on again if it hangs again (on the same connection, where it could not be closed).
   */
  private forgetHeard(nodes: ClusterMember[]): void {
    const silent = new Set(
      nodes.filter((n) => n.last_heard_ms >= this.options.dropAfterMs).map((n) => n.instance),
    );
    for (const key of this.handled) if (!silent.has(key.split(" ")[0])) this.handled.delete(key);
  }
}

/** The node that acts for the cluster: the first node that is up, by node id then process. */
function actorOf(nodes: ClusterMember[]): ClusterMember | undefined {
  return nodes
    .filter((n) => n.state === "up")
    .sort((a, b) => a.node.localeCompare(b.node) || a.instance.localeCompare(b.instance))[0];
}

function sameConnection(a: NatsConnectionRef | null, b: NatsConnectionRef): boolean {
  return a !== null && a.server_id === b.server_id && a.client_id === b.client_id;
}

function describe(node: ClusterMember, ref: NatsConnectionRef | null): string {
  const server = node.nats_server ? ` on nats-server ${node.nats_server}` : "";
  if (!ref) return `named mq9-${node.node}-broker${server}`;
  return `client id ${ref.client_id}, named ${ref.name}${server}, server id ${ref.server_id}`;
}

/** What the operator should do about a node that may hang, with what finds its connection. */
function advice(node: ClusterMember, ref: NatsConnectionRef | null, hasSystemUser: boolean): string {
  const close = ref
    ? `as a user of the NATS system account, request $SYS.REQ.SERVER.${ref.server_id}.KICK with {"cid":${ref.client_id}} (nats-server ${KICK_SINCE} or newer)`
    : "find it in the nats-servers' CONNZ by its name and close it";
  const remedy = hasSystemUser
    ? ""
    : `; or give the nodes --nats-system-user (or --nats-system-creds) of the system account and one of them does this by itself`;
  return `if its process hangs (SIGSTOP, a paused VM), the nats-servers keep handing it its share of the requests, which time out. Stop or restart node ${node.node}, or close its NATS connection (${describe(node, ref)}): ${close}${remedy} (docs/cluster.md, Hung nodes)`;
}
