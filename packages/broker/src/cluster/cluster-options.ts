import type { ClusterIdentity } from "./account-identity.js";

/** A user of the NATS system account: what lets a node drop a hung node's connection. */
export interface SystemAccountCredential {
  user?: string;
  password?: string;
  /** A .creds file of a system-account user (operator mode). */
  credsFile?: string;
}

/** How a cluster node reaches the NATS cluster it serves. */
export interface ClusterOptions {
  /** nats-server URLs of the cluster (`nats://host:4222`); the client fails over between them. */
  servers: string[];
  /** This node's name, in logs, /healthz and the NATS connection name. */
  nodeId: string;
  /**
   * This process as a node (`<node id>/<hex token>`, see newClusterInstance), when its database
   * connections were opened under it before the node started; made here otherwise.
   */
  instance?: string;
  token?: string;
  user?: string;
  password?: string;
  /** A NATS .creds file (JWT + nkey seed). */
  credsFile?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /**
   * Queue group every node serves `$mq9.AI.>` in (default "mq9"). It does not keep two mq9
   * clusters apart: NATS gives every queue group on a subject a copy of each request, so a second
   * cluster needs a NATS account of its own.
   */
  queueGroup?: string;
  /**
   * The URL of this node's HTTP server as other nodes' rosters and dashboards show it; default
   * http://<the HTTP server's host, or this machine's name when it binds every address>:<port>.
   */
  httpUrl?: string;
  /**
   * How the node learns who sent a request; without one it does not, and enforces no ownership
   * (each user's rights are then only what nats-server's permissions give it).
   */
  identity?: ClusterIdentity;
  /** How often the node tells the others it is there (default 2 s); missing after three silent intervals. */
  presenceIntervalMs?: number;
  /**
   * How long a node that is down (silent for thirty presence intervals) stays in the roster
   * unless an operator forgets it first (default 24 h).
   */
  downRetentionMs?: number;
  /**
   * How long another node may go unheard before this cluster treats it as hung: one node then
   * drops its NATS connection (with `systemAccount`) or logs how to (default 20 s; more than three
   * presence intervals).
   */
  dropMissingAfterMs?: number;
  /** Opt-in: a system-account user, so the node can ask nats-server to close a hung node's connection. */
  systemAccount?: SystemAccountCredential;
}
