import { z } from "zod";

const onOff = z
  .union([z.boolean(), z.enum(["on", "off", "true", "false"])])
  .default(false)
  .transform((v) => v === true || v === "on" || v === "true");

/**
 * `mq9 serve --cluster`: the NATS cluster to attach to and the shared PostgreSQL. `--postgres`
 * alone: one broker, with its own listener, on the PostgreSQL store.
 */
export const ClusterConfigSchema = z
  .object({
    enabled: onOff,
    /** Comma-separated nats-server URLs, or a list (config file). */
    nats: z
      .union([z.string(), z.array(z.string().min(1))])
      .optional()
      .transform((v) =>
        v === undefined ? [] : (Array.isArray(v) ? v : v.split(",")).map((s) => s.trim()).filter(Boolean),
      ),
    postgres: z
      .string()
      .refine(
        isPostgresUrl,
        "must be a postgres:// URL, like postgres://mq9:secret@db:5432/mq9 (a Unix socket: postgres://mq9@/mq9?host=/var/run/postgresql)",
      )
      .optional(),
    postgresSchema: z.string().min(1).default("mq9"),
    postgresPool: z.number().int().positive().default(10),
    nodeId: z.string().min(1).optional(),
    nodeHttpUrl: z
      .string()
      .regex(
        /^https?:\/\/[^\s/]+\/?$/,
        "must be an http:// or https:// URL of a host and port, like http://n1.example:8332",
      )
      .optional(),
    natsToken: z.string().min(1).optional(),
    natsUser: z.string().min(1).optional(),
    natsPassword: z.string().optional(),
    natsCreds: z.string().min(1).optional(),
    natsTlsCa: z.string().min(1).optional(),
    natsTlsCert: z.string().min(1).optional(),
    natsTlsKey: z.string().min(1).optional(),
    queueGroup: z.string().min(1).default("mq9"),
  })
  .strict()
  .prefault({})
  .superRefine((cluster, ctx) => {
    if (!cluster.enabled) {
      // A broker of its own listens itself: a NATS cluster given without --cluster would be ignored.
      if (cluster.nats.length > 0) {
        ctx.addIssue({
          code: "custom",
          path: ["nats"],
          message:
            "--nats is the NATS cluster of a cluster node: add --cluster (with --postgres), or leave --nats out to listen on --port",
        });
      }
      for (const key of NODE_ONLY) {
        if (cluster[key] === undefined) continue;
        const flag = CLUSTER_SETTINGS.find((setting) => setting.path[1] === key)?.flag ?? key;
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `--${flag} is a cluster node's setting: add --cluster (with --nats and --postgres), or leave it out`,
        });
      }
      return;
    }
    if (cluster.nats.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["nats"],
        message: "--cluster needs --nats nats://host:4222[,…]",
      });
    }
    if (!cluster.postgres) {
      ctx.addIssue({
        code: "custom",
        path: ["postgres"],
        message: "--cluster needs --postgres postgres://user@host/db (the shared store)",
      });
    }
  });

export type ClusterConfig = z.infer<typeof ClusterConfigSchema>;

/** pg reads anything else as a path relative to a made-up host, which fails later and obscurely. */
function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\/\S*$/.test(value);
}

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

type ClusterKey = keyof z.output<typeof ClusterConfigSchema> & string;

/** The cluster settings' flags and environment variables (see SETTINGS in config.ts). */
export const CLUSTER_SETTINGS: {
  path: ["cluster", ClusterKey];
  flag: string;
  env: string;
  kind: "string" | "number" | "switch";
  help: string;
}[] = [
  {
    path: ["cluster", "enabled"],
    flag: "cluster",
    env: "MQ9_CLUSTER",
    kind: "switch",
    help: "run as a node of a cluster: attach to --nats, keep state in --postgres (no embedded listener)",
  },
  {
    path: ["cluster", "nats"],
    flag: "nats",
    env: "MQ9_NATS",
    kind: "string",
    help: "cluster mode: nats-server URLs, comma-separated",
  },
  {
    path: ["cluster", "postgres"],
    flag: "postgres",
    env: "MQ9_POSTGRES",
    kind: "string",
    help: "keep state in PostgreSQL, postgres://user:password@host:5432/db (alone: one broker on it; with --cluster: the store the nodes share)",
  },
  {
    path: ["cluster", "postgresSchema"],
    flag: "postgres-schema",
    env: "MQ9_POSTGRES_SCHEMA",
    kind: "string",
    help: "with --postgres: the schema of mq9's tables",
  },
  {
    path: ["cluster", "postgresPool"],
    flag: "postgres-pool",
    env: "MQ9_POSTGRES_POOL",
    kind: "number",
    help: "with --postgres: PostgreSQL connections per broker",
  },
  {
    path: ["cluster", "nodeId"],
    flag: "node-id",
    env: "MQ9_NODE_ID",
    kind: "string",
    help: "cluster mode: this node's name (default: the host name and process id)",
  },
  {
    path: ["cluster", "nodeHttpUrl"],
    flag: "node-http-url",
    env: "MQ9_NODE_HTTP_URL",
    kind: "string",
    help: "cluster mode: this node's HTTP server as the other nodes' rosters and dashboards link to it (default: http://<--http-host, or the host name on a wildcard bind>:<--http-port>)",
  },
  {
    path: ["cluster", "natsToken"],
    flag: "nats-token",
    env: "MQ9_NATS_TOKEN",
    kind: "string",
    help: "cluster mode: token for the NATS cluster",
  },
  {
    path: ["cluster", "natsUser"],
    flag: "nats-user",
    env: "MQ9_NATS_USER",
    kind: "string",
    help: "cluster mode: user for the NATS cluster",
  },
  {
    path: ["cluster", "natsPassword"],
    flag: "nats-password",
    env: "MQ9_NATS_PASSWORD",
    kind: "string",
    help: "cluster mode: password for --nats-user",
  },
  {
    path: ["cluster", "natsCreds"],
    flag: "nats-creds",
    env: "MQ9_NATS_CREDS",
    kind: "string",
    help: "cluster mode: NATS .creds file (JWT and nkey)",
  },
  {
    path: ["cluster", "natsTlsCa"],
    flag: "nats-tls-ca",
    env: "MQ9_NATS_TLS_CA",
    kind: "string",
    help: "cluster mode: CA (PEM) of the nats-servers' certificates",
  },
  {
    path: ["cluster", "natsTlsCert"],
    flag: "nats-tls-cert",
    env: "MQ9_NATS_TLS_CERT",
    kind: "string",
    help: "cluster mode: client certificate (PEM) for the NATS cluster",
  },
  {
    path: ["cluster", "natsTlsKey"],
    flag: "nats-tls-key",
    env: "MQ9_NATS_TLS_KEY",
    kind: "string",
    help: "cluster mode: key (PEM) of --nats-tls-cert",
  },
];
