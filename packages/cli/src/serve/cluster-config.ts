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
] as const;

/**
 * `mq9 serve --cluster`: the NATS cluster to attach to and the shared PostgreSQL. `--postgres`
 * alone: one broker, with its own listener, on the PostgreSQL store. The checks across the
 * cluster's settings (the settings themselves are declared in settings/serve-settings.ts).
 */
export function checkClusterSettings(cluster: ServeConfig["cluster"], ctx: z.RefinementCtx): void {
  if (!cluster.enabled) {
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
      if (cluster[key] === undefined) continue;
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
  if (!cluster.postgres) {
    ctx.addIssue({
      code: "custom",
      path: ["cluster", "postgres"],
      message: "--cluster needs --postgres postgres://user@host/db (the shared store)",
    });
  }
}
