import type { z } from "zod";
import { SERVE_SETTINGS, type ServeConfig } from "./settings/serve-settings.js";

/** Settings only a cluster node uses: refused without --cluster rather than ignored. */
const NODE_ONLY = [
  "nodeId",
  "nodeHttpUrl",
  "natsToken",
  "natsUser",
  "natsPassword",
  "natsCreds",
  "natsTlsCa",
  "natsTlsCert",
  "natsTlsKey",
  "admins",
  "httpWithoutAuth",
  "natsSystemUser",
  "natsSystemPassword",
  "natsSystemCreds",
] as const;

/** A node is missing after three silent presence intervals of 2 s: a hung node is one silent longer. */
const MISSING_AFTER_S = 6;

/**
 * `mq9 serve --cluster`: the NATS cluster to attach to and the shared PostgreSQL. `--postgres`
 * alone: one broker, with its own listener, on the PostgreSQL store. The checks across the
 * cluster's settings (the settings themselves are declared in settings/serve-settings.ts).
 */
export function checkClusterSettings(config: ServeConfig, ctx: z.RefinementCtx): void {
  const cluster = config.cluster;
  if (!cluster.enabled) {
    if (cluster.identity !== "none") {
      ctx.addIssue({
        code: "custom",
        path: ["cluster", "identity"],
        message:
          "--cluster-identity is a cluster node's setting: add --cluster (with --nats and --postgres), or leave it out",
      });
    }
    // A broker of its own listens itself: a NATS cluster given without --cluster would be ignored.
    if (cluster.nats.length > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["cluster", "nats"],
        message:
          "--nats is the NATS cluster of a cluster node: add --cluster (with --postgres), or leave --nats out to listen on --port",
      });
    }
    for (const key of NODE_ONLY) {
      const value = cluster[key];
      if (value === undefined || value === false || (Array.isArray(value) && value.length === 0)) continue;
      ctx.addIssue({
        code: "custom",
        path: ["cluster", key],
        message: `--${SERVE_SETTINGS.cluster[key].flag} is a cluster node's setting: add --cluster (with --nats and --postgres), or leave it out`,
      });
    }
    return;
  }
  if (cluster.nats.length === 0) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "nats"],
      message: "--cluster needs --nats nats://host:4222[,…]",
    });
  }
  if (cluster.admins.length > 0 && cluster.identity !== "account-prefix") {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "admins"],
      message:
        "--cluster-admins names accounts of --cluster-identity account-prefix: add it, or leave --cluster-admins out (without an identity every requester may do everything)",
    });
  }
  if (
    cluster.identity === "account-prefix" &&
    !(cluster.natsUser || cluster.natsToken || cluster.natsCreds)
  ) {
    // Without a user of its own the node is no account's member, and anyone could publish in its.
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "identity"],
      message:
        "--cluster-identity account-prefix needs the node's own NATS user (--nats-user, --nats-token or --nats-creds) in an account of the nodes alone: the nats-servers' accounts are what make the prefix the requester (docs/cluster.md, One NATS account per user)",
    });
  }
  checkSystemAccount(cluster, ctx);
  const secured = securedBy(cluster);
  const httpAuth = config.auth.token ?? config.auth.user ?? config.auth.users;
  if (secured !== undefined && httpAuth === undefined && !cluster.httpWithoutAuth) {
    ctx.addIssue({
      code: "custom",
      path: ["auth", "token"],
      message: `this node's NATS side is secured (${secured}) but its HTTP API would be open: anyone who reaches --http-port could read, purge and delete every mailbox and use MCP and the dashboard with the node's rights. Give it --token (or auth.users with an admin), or pass --http-without-auth to run it open on purpose`,
    });
  }
  if (!cluster.postgres) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "postgres"],
      message: "--cluster needs --postgres postgres://user@host/db (the shared store)",
    });
  }
}

/** What secures a node's NATS side, named for the refusal of an open HTTP API; undefined: nothing. */
function securedBy(cluster: ServeConfig["cluster"]): string | undefined {
  if (cluster.identity !== "none") return `--cluster-identity ${cluster.identity}`;
  if (cluster.natsCreds) return "--nats-creds";
  if (cluster.natsToken) return "--nats-token";
  if (cluster.natsUser) return "--nats-user";
  if (cluster.natsTlsCert) return "--nats-tls-cert";
  return undefined;
}

/** The opt-in system-account user that drops hung nodes: one way to log in, and a bound past missing. */
function checkSystemAccount(cluster: ServeConfig["cluster"], ctx: z.RefinementCtx): void {
  if (cluster.natsSystemPassword !== undefined && cluster.natsSystemUser === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "natsSystemPassword"],
      message: "--nats-system-password is the password of --nats-system-user: give the user too",
    });
  }
  if (cluster.natsSystemUser !== undefined && cluster.natsSystemCreds !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "natsSystemCreds"],
      message:
        "--nats-system-user and --nats-system-creds are two ways to log in as the system account's user: give one",
    });
  }
  if (cluster.dropMissingAfterS <= MISSING_AFTER_S) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "dropMissingAfterS"],
      message: `--drop-missing-after must be more than ${MISSING_AFTER_S} s: a node is only missing after three silent presence intervals of 2 s, and one merely slow must not be dropped`,
    });
  }
}
