import { readFileSync } from "node:fs";
import { BrokerDefaults } from "@mq9/broker";
import { UserDirectory } from "@mq9/broker/internal";
import { closestName, Defaults } from "@mq9/protocol";
import { z } from "zod";
import { DEFAULT_TEMPLATES_FOLDER } from "../shared/templates-folder.js";
import { CLUSTER_SETTINGS, ClusterConfigSchema } from "./cluster-config.js";

const port = z.number().int().min(0).max(65535);
const WHOLE_ABOVE_ZERO = "must be a whole number above 0";
const positiveInt = z.number().int({ error: WHOLE_ABOVE_ZERO }).positive({ error: WHOLE_ABOVE_ZERO });
const WHOLE_FROM_ZERO = "must be a whole number, 0 or more";
const nonNegativeInt = z.number().int({ error: WHOLE_FROM_ZERO }).min(0, { error: WHOLE_FROM_ZERO });
const EMPTY_PASSWORD =
  "an empty password is refused: set a password (or a bcrypt hash of one), or use a token";

/** nats-server's allow/deny lists: a bare list is an allow list. */
const subjectRules = z.union([
  z.array(z.string().min(1)),
  z
    .object({ allow: z.array(z.string().min(1)).optional(), deny: z.array(z.string().min(1)).optional() })
    .strict(),
]);
const allowResponses = z.union([
  z.boolean(),
  z.object({ max: positiveInt.optional(), expiresMs: z.number().int().min(0).optional() }).strict(),
]);
const permissions = z.union([
  z.enum(["all", "agent"]),
  z
    .object({
      publish: subjectRules.optional(),
      subscribe: subjectRules.optional(),
      allowResponses: allowResponses.optional(),
      /** nats-server's spelling, accepted as well. */
      allow_responses: allowResponses.optional(),
    })
    .strict()
    .transform(({ allow_responses, ...rest }) => ({
      ...rest,
      allowResponses: rest.allowResponses ?? allow_responses,
    })),
]);
const userEntry = z
  .object({
    user: z.string().min(1).optional(),
    password: z.string().min(1, EMPTY_PASSWORD).optional(),
    token: z.string().min(1, "an empty token is refused").optional(),
    nkey: z.string().min(1).optional(),
    admin: z.boolean().optional(),
    permissions: permissions.optional(),
    /** Mail-address patterns this user may read and manage like their owner. */
    mailboxes: z.array(z.string().min(1)).optional(),
  })
  .strict();
const hostList = z.array(z.string().min(1));

/** Why each SQLite store setting is refused with --postgres. */
const SQLITE_ONLY_ON_POSTGRES = {
  data: "--data is the SQLite store's folder: with --postgres everything is kept in PostgreSQL; leave --data out",
  sync: "--sync sets how the SQLite store flushes: with --postgres durability is PostgreSQL's own (synchronous_commit, replication); leave --sync out",
} as const;

/** Everything `mq9 serve` can be told, with defaults; file, env (MQ9_*) and flags all feed it. */
export const ServeConfigSchema = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default(BrokerDefaults.host),
        port: port.default(Defaults.port),
        maxPayload: positiveInt.default(Defaults.maxPayload),
        maxConnections: positiveInt.default(BrokerDefaults.maxConnections),
        maxPendingBytes: positiveInt.default(BrokerDefaults.maxPendingBytes),
        /** Seconds between liveness checks (nats-server's ping_interval); see docs/security.md. */
        pingInterval: z
          .number()
          .positive()
          .default(BrokerDefaults.pingIntervalMs / 1000),
        /** Unanswered PINGs before a client is closed as stale (nats-server's ping_max). */
        pingMax: positiveInt.default(BrokerDefaults.maxPingsOut),
      })
      .strict()
      .prefault({}),
    http: z
      .object({
        host: z.string().min(1).optional(),
        port: port.default(Defaults.httpPort),
        /** Host names requests may carry in Host (DNS-rebinding protection); "*" turns the check off. */
        allowedHosts: hostList.optional(),
        /** Host names a browser's Origin may carry; defaults to allowedHosts. */
        allowedOrigins: hostList.optional(),
      })
      .strict()
      .prefault({}),
    auth: z
      .object({
        token: z.string().min(1, "an empty token is refused").optional(),
        user: z.string().min(1).optional(),
        password: z.string().min(1, EMPTY_PASSWORD).optional(),
        /** Several users with permissions: isolates clients from each other (docs/security.md). */
        users: z.array(userEntry).optional(),
        defaultPermissions: permissions.optional(),
      })
      .strict()
      .prefault({}),
    tls: z
      .object({
        cert: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
        ca: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    storage: z
      .object({
        // No defaults here: on PostgreSQL both are refused when given (see below), then filled.
        data: z.string().min(1).optional(),
        sync: z.enum(["normal", "full"]).optional(),
      })
      .strict()
      .prefault({}),
    messaging: z
      .object({
        leaseMs: positiveInt.default(BrokerDefaults.leaseMs),
        maxWaitMs: z.number().int().min(0).default(BrokerDefaults.maxWaitMs),
        fetchMaxBytes: positiveInt.default(BrokerDefaults.fetchMaxBytes),
        defaultMailboxTtl: z.number().int().min(0).default(BrokerDefaults.defaultMailboxTtlSeconds),
      })
      .strict()
      .prefault({}),
    registry: z
      .object({
        /** use: Universal Sentence Encoder lite (built in); static: a token table distilled from it; onnx: a BERT-shaped model in modelDir; none: no semantic search. */
        embedder: z.enum(["use", "static", "onnx", "none"]).default("use"),
        /** local: SQLite + HNSW (built in); lancedb: the optional @lancedb/lancedb package. */
        vectorStore: z.enum(["local", "lancedb"]).default("local"),
        modelDir: z.string().min(1).optional(),
        /** A static embedder table file instead of the one the build wrote. */
        staticTablePath: z.string().min(1).optional(),
        pooling: z.enum(["mean", "cls"]).optional(),
        queryPrefix: z.string().optional(),
        defaultTtl: z.number().int().min(0).default(0),
        annThreshold: positiveInt.default(2_000),
        efSearch: positiveInt.optional(),
        /** Embedding worker threads (use and onnx), each with its own copy of the model; default one per core, at most 4. */
        embedderWorkers: positiveInt.optional(),
        maxCardBytes: positiveInt.default(256 * 1024),
        maxSkills: positiveInt.default(256),
        preload: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    orchestrator: z
      .object({
        /** Run the orchestrator (routing, task templates, /api/tasks...) in the serve process. */
        enabled: z
          .union([z.boolean(), z.enum(["on", "off"])])
          .default(true)
          .transform((v) => v === true || v === "on"),
        /** Folder of YAML task templates, reloaded when it changes. */
        templates: z.string().min(1).default(DEFAULT_TEMPLATES_FOLDER),
        /** Prefix of the orchestrator's mailboxes. */
        namespace: z.string().min(1).default("orch"),
        /** Least calibrated DISCOVER score for intent routing, when the registry reports scores. */
        intentThreshold: z.number().min(0).max(1).default(Defaults.intentMinScore),
        /** Messages one trace may route before the rest are dead-lettered. */
        traceBudget: positiveInt.default(1_000),
        /** How often (ms) the orchestrated agents are read from the registry. */
        directoryRefreshMs: positiveInt.default(1_000),
        /** Seconds finished tasks are kept. */
        retentionSeconds: positiveInt.default(7 * 86_400),
        /** Seconds messages stay in agents' mailboxes (traces are read from them). */
        messageTtlSeconds: positiveInt.default(7 * 86_400),
        /** Seconds a trace's shared memory lives. */
        memoryTtlSeconds: positiveInt.default(86_400),
        /** Tasks run at once; later ones are queued (pending). */
        maxTasksInFlight: positiveInt.default(10_000),
        /** Tasks that may wait in the queue; beyond it POST /api/tasks answers 429 with Retry-After. */
        queueCapacity: nonNegativeInt.default(10_000),
        /** Work in progress one agent may have; beyond it steps wait in the orchestrator. 0 = no limit. */
        agentConcurrency: nonNegativeInt.default(0),
        /** Messages per FETCH of the router mailbox and the orchestrator's inbox. */
        pollBatch: positiveInt.default(256),
        /** Longest wait (ms) of one FETCH of an empty mailbox. */
        pollTimeoutMs: positiveInt.default(2_000),
        /**
         * Messages of the router mailbox handled at once: each waits for its SEND, so this over
         * the SEND latency bounds the router's rate; above pollBatch, FETCHes overlap the SENDs.
         */
        routerConcurrency: positiveInt.default(1_024),
        /** Share (0..1) of routed messages with a log line (debug); tasks and steps always get one. */
        logSampleRate: z.number().min(0).max(1).default(0.01),
        webhooks: z
          .array(
            z
              .object({
                url: z.url(),
                events: z
                  .array(
                    z.enum([
                      "task_completed",
                      "task_failed",
                      "task_timeout",
                      "task_canceled",
                      "agent_dead",
                      "loop_detected",
                    ]),
                  )
                  .optional(),
                /** Shared secret: bodies are signed with HMAC-SHA256 in x-mq9-signature. */
                secret: z.string().min(1).optional(),
                maxAttempts: positiveInt.optional(),
                backoffMs: positiveInt.optional(),
              })
              .strict(),
          )
          .default([]),
      })
      .strict()
      .prefault({}),
    cluster: ClusterConfigSchema,
    log: z
      .object({
        level: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
        format: z.enum(["pretty", "json"]).default("pretty"),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.registry.embedder === "onnx" && !config.registry.modelDir) {
      ctx.addIssue({
        code: "custom",
        path: ["registry", "modelDir"],
        message: "the onnx embedder needs registry.modelDir (a folder from 'mq9 models fetch')",
      });
    }
    if (Boolean(config.tls.cert) !== Boolean(config.tls.key)) {
      ctx.addIssue({ code: "custom", path: ["tls"], message: "tls.cert and tls.key must be given together" });
    }
    if (config.auth.user !== undefined && config.auth.password === undefined) {
      ctx.addIssue({ code: "custom", path: ["auth", "password"], message: "a user needs a password" });
    }
    if (config.auth.token !== undefined && config.auth.user !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["auth"],
        message: "use either a token or a user/password, not both",
      });
    }
    if (config.auth.users !== undefined) {
      try {
        UserDirectory.from(config.auth);
      } catch (err) {
        ctx.addIssue({ code: "custom", path: ["auth", "users"], message: (err as Error).message });
      }
    }
    // The SQLite store's settings would be ignored on PostgreSQL: refused, not silently dropped.
    if (config.cluster.postgres !== undefined) {
      for (const key of ["data", "sync"] as const) {
        if (config.storage[key] === undefined) continue;
        ctx.addIssue({ code: "custom", path: ["storage", key], message: SQLITE_ONLY_ON_POSTGRES[key] });
      }
    }
  })
  .transform((config) => ({
    ...config,
    storage: { data: config.storage.data ?? BrokerDefaults.dataDir, sync: config.storage.sync ?? "normal" },
  }));

export type ServeConfig = z.infer<typeof ServeConfigSchema>;

/** One setting: where it sits in the config file, its flag and its environment variable. */
interface Setting {
  path: [string, string];
  flag: string;
  env: string;
  /** list: comma-separated on the command line and in the environment. */
  kind: "string" | "number" | "list" | "switch";
  help: string;
}

export const SETTINGS: Setting[] = [
  { path: ["server", "host"], flag: "host", env: "MQ9_HOST", kind: "string", help: "address to listen on" },
  {
    path: ["server", "port"],
    flag: "port",
    env: "MQ9_PORT",
    kind: "number",
    help: "NATS-protocol port (0 = any free port)",
  },
  {
    path: ["server", "maxPayload"],
    flag: "max-payload",
    env: "MQ9_MAX_PAYLOAD",
    kind: "number",
    help: "largest message in bytes",
  },
  {
    path: ["server", "maxConnections"],
    flag: "max-connections",
    env: "MQ9_MAX_CONNECTIONS",
    kind: "number",
    help: "most clients at once",
  },
  {
    path: ["server", "pingInterval"],
    flag: "ping-interval",
    env: "MQ9_PING_INTERVAL",
    kind: "number",
    help: "seconds between liveness PINGs to idle clients (default 30)",
  },
  {
    path: ["server", "pingMax"],
    flag: "ping-max",
    env: "MQ9_PING_MAX",
    kind: "number",
    help: "unanswered PINGs before a client is closed as stale (default 2)",
  },
  {
    path: ["http", "allowedHosts"],
    flag: "http-allowed-hosts",
    env: "MQ9_HTTP_ALLOWED_HOSTS",
    kind: "list",
    help: "host names the HTTP routes answer to (comma-separated; * = any); default: loopback names on a loopback bind",
  },
  {
    path: ["http", "allowedOrigins"],
    flag: "http-allowed-origins",
    env: "MQ9_HTTP_ALLOWED_ORIGINS",
    kind: "list",
    help: "host names a browser Origin may name (comma-separated; * = any); default: the allowed hosts",
  },
  {
    path: ["http", "host"],
    flag: "http-host",
    env: "MQ9_HTTP_HOST",
    kind: "string",
    help: "address of the HTTP server (/healthz, /metrics); defaults to --host",
  },
  {
    path: ["http", "port"],
    flag: "http-port",
    env: "MQ9_HTTP_PORT",
    kind: "number",
    help: "HTTP port (0 = any free port)",
  },
  { path: ["storage", "data"], flag: "data", env: "MQ9_DATA", kind: "string", help: "data directory" },
  {
    path: ["storage", "sync"],
    flag: "sync",
    env: "MQ9_STORAGE_SYNC",
    kind: "string",
    help: "normal (survives a killed process) or full (survives power loss)",
  },
  {
    path: ["auth", "token"],
    flag: "token",
    env: "MQ9_TOKEN",
    kind: "string",
    help: "require this token from clients",
  },
  { path: ["auth", "user"], flag: "user", env: "MQ9_USER", kind: "string", help: "require this user name" },
  {
    path: ["auth", "password"],
    flag: "password",
    env: "MQ9_PASSWORD",
    kind: "string",
    help: "password for --user",
  },
  {
    path: ["tls", "cert"],
    flag: "tls-cert",
    env: "MQ9_TLS_CERT",
    kind: "string",
    help: "TLS certificate file (PEM)",
  },
  {
    path: ["tls", "key"],
    flag: "tls-key",
    env: "MQ9_TLS_KEY",
    kind: "string",
    help: "TLS private key file (PEM)",
  },
  {
    path: ["tls", "ca"],
    flag: "tls-ca",
    env: "MQ9_TLS_CA",
    kind: "string",
    help: "CA file for client certificates",
  },
  {
    path: ["messaging", "leaseMs"],
    flag: "lease-ms",
    env: "MQ9_LEASE_MS",
    kind: "number",
    help: "lease of a fetched, un-ACKed message",
  },
  {
    path: ["messaging", "maxWaitMs"],
    flag: "max-wait-ms",
    env: "MQ9_MAX_WAIT_MS",
    kind: "number",
    help: "cap on a FETCH's long-poll",
  },
  {
    path: ["messaging", "defaultMailboxTtl"],
    flag: "default-mailbox-ttl",
    env: "MQ9_DEFAULT_MAILBOX_TTL",
    kind: "number",
    help: "TTL (s) of mailboxes created without one; 0 = never",
  },
  {
    path: ["registry", "embedder"],
    flag: "registry-embedder",
    env: "MQ9_REGISTRY_EMBEDDER",
    kind: "string",
    help: "agent registry embedder: use (built in), static (built in: a token table distilled from use, far cheaper, less relevant), onnx (needs --registry-model-dir) or none",
  },
  {
    path: ["registry", "embedderWorkers"],
    flag: "registry-embedder-workers",
    env: "MQ9_REGISTRY_EMBEDDER_WORKERS",
    kind: "number",
    help: "embedding worker threads for use and onnx, each with its own copy of the model (default one per core, at most 4)",
  },
  {
    path: ["registry", "modelDir"],
    flag: "registry-model-dir",
    env: "MQ9_REGISTRY_MODEL_DIR",
    kind: "string",
    help: "folder of the onnx embedder's model (see 'mq9 models fetch')",
  },
  {
    path: ["registry", "vectorStore"],
    flag: "registry-vector-store",
    env: "MQ9_REGISTRY_VECTOR_STORE",
    kind: "string",
    help: "where skill vectors live: local (built in) or lancedb (needs the optional @lancedb/lancedb)",
  },
  {
    path: ["registry", "defaultTtl"],
    flag: "registry-default-ttl",
    env: "MQ9_REGISTRY_DEFAULT_TTL",
    kind: "number",
    help: "ttl (s) of agent registrations without one; 0 = never expire",
  },
  {
    path: ["orchestrator", "enabled"],
    flag: "orchestrator",
    env: "MQ9_ORCHESTRATOR",
    kind: "string",
    help: "on (default) or off: run the orchestrator and its /api routes in this process",
  },
  {
    path: ["orchestrator", "templates"],
    flag: "templates",
    env: "MQ9_TEMPLATES",
    kind: "string",
    help: "folder of the orchestrator's YAML task templates",
  },
  {
    path: ["orchestrator", "namespace"],
    flag: "orchestrator-namespace",
    env: "MQ9_ORCHESTRATOR_NAMESPACE",
    kind: "string",
    help: "prefix of the orchestrator's mailboxes (default orch)",
  },
  {
    path: ["orchestrator", "intentThreshold"],
    flag: "intent-threshold",
    env: "MQ9_INTENT_THRESHOLD",
    kind: "number",
    help: "least similarity (0..1) of an intent match (default 0.2)",
  },
  {
    path: ["orchestrator", "traceBudget"],
    flag: "trace-budget",
    env: "MQ9_TRACE_BUDGET",
    kind: "number",
    help: "messages one trace may route (default 1000)",
  },
  {
    path: ["orchestrator", "directoryRefreshMs"],
    flag: "directory-refresh-ms",
    env: "MQ9_DIRECTORY_REFRESH_MS",
    kind: "number",
    help: "how often the orchestrated agents are re-read (default 1000)",
  },
  {
    path: ["orchestrator", "retentionSeconds"],
    flag: "task-retention",
    env: "MQ9_TASK_RETENTION",
    kind: "number",
    help: "seconds finished tasks are kept (default 7 days)",
  },
  {
    path: ["orchestrator", "messageTtlSeconds"],
    flag: "message-ttl",
    env: "MQ9_MESSAGE_TTL",
    kind: "number",
    help: "seconds orchestrated messages are kept (default 7 days)",
  },
  {
    path: ["orchestrator", "memoryTtlSeconds"],
    flag: "memory-ttl",
    env: "MQ9_MEMORY_TTL",
    kind: "number",
    help: "seconds a trace's memory lives (default 1 day)",
  },
  {
    path: ["orchestrator", "maxTasksInFlight"],
    flag: "max-tasks-in-flight",
    env: "MQ9_MAX_TASKS_IN_FLIGHT",
    kind: "number",
    help: "tasks run at once; the rest are queued (default 10000)",
  },
  {
    path: ["orchestrator", "queueCapacity"],
    flag: "queue-capacity",
    env: "MQ9_QUEUE_CAPACITY",
    kind: "number",
    help: "tasks that may be queued; beyond it 429 (default 10000)",
  },
  {
    path: ["orchestrator", "agentConcurrency"],
    flag: "agent-concurrency",
    env: "MQ9_AGENT_CONCURRENCY",
    kind: "number",
    help: "work in progress per agent before steps wait; 0 = no limit (default)",
  },
  {
    path: ["orchestrator", "pollBatch"],
    flag: "poll-batch",
    env: "MQ9_POLL_BATCH",
    kind: "number",
    help: "messages per FETCH of the router mailbox and inbox (default 256)",
  },
  {
    path: ["orchestrator", "pollTimeoutMs"],
    flag: "poll-timeout-ms",
    env: "MQ9_POLL_TIMEOUT_MS",
    kind: "number",
    help: "longest wait of a FETCH of an empty mailbox (default 2000)",
  },
  {
    path: ["orchestrator", "routerConcurrency"],
    flag: "router-concurrency",
    env: "MQ9_ROUTER_CONCURRENCY",
    kind: "number",
    help: "router messages handled at once (default 1024)",
  },
  {
    path: ["orchestrator", "logSampleRate"],
    flag: "log-sample-rate",
    env: "MQ9_LOG_SAMPLE_RATE",
    kind: "number",
    help: "share (0..1) of routed messages logged at debug (default 0.01)",
  },
  {
    path: ["log", "level"],
    flag: "log-level",
    env: "MQ9_LOG_LEVEL",
    kind: "string",
    help: "trace, debug, info, warn, error or silent",
  },
  {
    path: ["log", "format"],
    flag: "log-format",
    env: "MQ9_LOG_FORMAT",
    kind: "string",
    help: "pretty (readable) or json (structured)",
  },
  ...CLUSTER_SETTINGS,
];

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Tree = Record<string, Record<string, unknown>>;

function setIn(tree: Tree, [section, key]: [string, string], value: unknown): void {
  tree[section] ??= {};
  tree[section][key] = value;
}

function convert(setting: Setting, raw: string, source: string): unknown {
  if (setting.kind === "string" || setting.kind === "switch") return raw;
  if (setting.kind === "list") {
    return raw
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
  }
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(value)) {
    throw new ConfigError(`${source} must be a number, got '${raw}'`);
  }
  return value;
}

function readFile(file: string): Tree {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new Error("expected a JSON object");
    return value as Tree;
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface ConfigSources {
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Commander's parsed options, keyed by camelCased flag name. */
  flags?: Record<string, unknown>;
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** "; did you mean 'pollBatch'?" for misspelt keys of a config file section, where one is close. */
function keyHints(path: PropertyKey[], keys: string[]): string {
  const known = new Set(
    SETTINGS.filter((s) => s.path.length > path.length && path.every((p, i) => s.path[i] === p)).map(
      (s) => s.path[path.length],
    ),
  );
  const guesses = keys.flatMap((key) => {
    const guess = closestName(key, known);
    return guess ? [`'${key}': did you mean '${guess}'?`] : [];
  });
  return guesses.length > 0 ? ` (${guesses.join("; ")})` : "";
}

/** A setting's value as an error may print it: no secret, and no password inside a URL. */
function shown(flag: string, value: string): string {
  if (/password|token|secret/.test(flag)) return "(hidden)";
  // Up to the last "@": a password may hold one unencoded (p@ss), and masking more is harmless.
  return value.replace(/(\/\/[^:/@\s]*:)\S*@/, "$1***@");
}

/** Merges file, then MQ9_* environment, then flags (flags win) and validates the result. */
export function loadServeConfig(sources: ConfigSources): ServeConfig {
  const env = sources.env ?? {};
  const file = sources.file ?? env.MQ9_CONFIG;
  const tree: Tree = file ? readFile(file) : {};
  // Where each setting's value came from, so a refused value names what to change.
  const origins = new Map<string, string>();
  for (const setting of SETTINGS) {
    const at = setting.path.join(".");
    if (file && tree[setting.path[0]]?.[setting.path[1]] !== undefined) {
      origins.set(at, `set in ${file}; its flag is --${setting.flag}, its variable ${setting.env}`);
    }
    const fromEnv = env[setting.env];
    if (fromEnv !== undefined && fromEnv !== "") {
      setIn(tree, setting.path, convert(setting, fromEnv, setting.env));
      origins.set(at, `set by ${setting.env}=${shown(setting.flag, fromEnv)}`);
    }
    const fromFlag = sources.flags?.[camel(setting.flag)];
    if (fromFlag !== undefined) {
      setIn(tree, setting.path, convert(setting, String(fromFlag), `--${setting.flag}`));
      origins.set(at, `set by --${setting.flag} ${shown(setting.flag, String(fromFlag))}`);
    }
  }
  const parsed = ServeConfigSchema.safeParse(tree);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const at = issue.path.join(".");
      const origin = origins.get(issue.path.slice(0, 2).join("."));
      const hint = issue.code === "unrecognized_keys" ? keyHints(issue.path, issue.keys) : "";
      return `${at || "config"}: ${issue.message}${hint}${origin ? ` (${origin})` : ""}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  return parsed.data;
}
