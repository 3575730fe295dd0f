import { didYouMean, isValidMailAddress } from "@mq9/protocol";
import { agentMailbox } from "../bus/names.js";

/**
 * Carried by every agent the Agent SDK registers, so the orchestrator's directory can
 * read just the agents it routes to each second: reading the whole registry every second
 * would cost the broker DISCOVER replies in proportion to every agent registered.
 */
export const ORCHESTRATED_TAG = "mq9.orchestrated";

/** Who an agent is and what it takes on; what the router knows of it comes from here. */
export interface AgentManifest {
  /** Unique name; instances that share a name share the inbox and the work. */
  name: string;
  /** What the agent can do; template steps and messages ask for these. */
  capabilities: string[];
  /** What the agent does, in words: intent routing matches requests against it. */
  description?: string;
  /** Labels: a list (`["text", "en"]`) or an object (`{team: "nlp"}`, registered as `team:nlp`). */
  tags?: string[] | Record<string, string | number | boolean>;
  /**
   * Where the agent takes its mail (the design's manifest field): an mq9 mail address or
   * `mq9://host:port/<mail address>`, used as the mailbox when `mailbox` is not given; any
   * other URL (an HTTP endpoint) is kept in the registration for people, not routed to;
   * anything else is refused.
   */
  endpoint?: string;
  /** Messages handled at once (default 1); the rest wait in the agent's own mailbox. */
  max_concurrency?: number;
  /** Relative share of work among agents with the same capability (default 1). */
  weight?: number;
  /** Inbox; default `agent.<name>`. */
  mailbox?: string;
}

/** A manifest with its defaults filled in. */
export type ResolvedManifest = Required<Omit<AgentManifest, "tags" | "endpoint">> & {
  tags: string[];
  endpoint?: string;
};

/** What the registry entry of an orchestrated agent carries for the router. */
export interface ManifestRecord {
  capabilities: string[];
  weight: number;
  max_concurrency: number;
  heartbeat_ms: number;
}

export class ManifestError extends Error {
  override name = "ManifestError";
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,99}$/;
const CAPABILITY = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

const MANIFEST_KEYS: readonly (keyof AgentManifest)[] = [
  "name",
  "capabilities",
  "description",
  "tags",
  "endpoint",
  "max_concurrency",
  "weight",
  "mailbox",
];
const NAME_RULE = "lowercase letters, digits, '.', '_' or '-' (at most 100)";
const CAPABILITY_RULE = "letters, digits, '_', '.', ':' or '-' (at most 100)";

/** Checks a manifest and fills in defaults; throws ManifestError saying what to fix. */
export function resolveManifest(manifest: AgentManifest): ResolvedManifest {
  if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) {
    throw new ManifestError("a manifest is an object: {name, capabilities, ...}");
  }
  const { name } = manifest;
  const who = typeof name === "string" && NAME.test(name) ? `agent '${name}': ` : "";
  // A misspelt key would otherwise be dropped, and its default used without a word.
  for (const key of Object.keys(manifest)) {
    if ((MANIFEST_KEYS as string[]).includes(key)) continue;
    const hint = didYouMean(key, MANIFEST_KEYS) || `; a manifest has ${MANIFEST_KEYS.join(", ")}`;
    throw new ManifestError(`${who}unknown key '${key}'${hint}`);
  }
  if (name === undefined) throw new ManifestError(`'name' is required: the agent's name, ${NAME_RULE}`);
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new ManifestError(`agent name '${String(name)}' is not valid: use ${NAME_RULE}`);
  }
  if (manifest.capabilities === undefined) {
    throw new ManifestError(`${who}'capabilities' is required: a list of what it does, e.g. ["summarize"]`);
  }
  if (!Array.isArray(manifest.capabilities)) {
    throw new ManifestError(`${who}'capabilities' must be a list of names, e.g. ["summarize"]`);
  }
  const badCapability = manifest.capabilities.find((c) => typeof c !== "string" || !CAPABILITY.test(c));
  if (badCapability !== undefined) {
    throw new ManifestError(
      `${who}capability ${JSON.stringify(badCapability)} is not valid: use ${CAPABILITY_RULE}`,
    );
  }
  const maxConcurrency = manifest.max_concurrency ?? 1;
  if (!Number.isSafeInteger(maxConcurrency) || maxConcurrency < 1) {
    throw new ManifestError(`agent '${name}': max_concurrency must be a whole number >= 1`);
  }
  const weight = manifest.weight ?? 1;
  if (typeof weight !== "number" || !Number.isFinite(weight) || weight <= 0) {
    throw new ManifestError(`agent '${name}': weight must be a number > 0`);
  }
  const endpointMailbox = mailboxOfEndpoint(name, manifest.endpoint);
  const mailbox = manifest.mailbox ?? endpointMailbox ?? agentMailbox(name);
  if (!isValidMailAddress(mailbox)) {
    throw new ManifestError(`agent '${name}': mailbox '${mailbox}' is not a valid mail address`);
  }
  return {
    name,
    capabilities: [...new Set(manifest.capabilities)],
    description: manifest.description ?? "",
    tags: tagList(name, manifest.tags),
    max_concurrency: maxConcurrency,
    weight,
    mailbox,
    ...(manifest.endpoint === undefined ? {} : { endpoint: manifest.endpoint }),
  };
}

/** Tags as the registry keeps them (strings): a list as it is, an object as `key:value`. */
function tagList(name: string, tags: AgentManifest["tags"]): string[] {
  if (tags === undefined || tags === null) return [];
  if (Array.isArray(tags)) {
    if (tags.some((t) => typeof t !== "string" || t === "")) {
      throw new ManifestError(`agent '${name}': tags must be non-empty strings`);
    }
    return [...tags];
  }
  if (typeof tags !== "object") {
    throw new ManifestError(`agent '${name}': tags must be a list of strings or an object of key: value`);
  }
  return Object.entries(tags).map(([key, value]) => {
    if (!["string", "number", "boolean"].includes(typeof value)) {
      throw new ManifestError(`agent '${name}': tag '${key}' must have a string, number or boolean value`);
    }
    return `${key}:${String(value)}`;
  });
}

/** The mailbox an `endpoint` names, if it names one (see AgentManifest.endpoint). */
function mailboxOfEndpoint(name: string, endpoint: unknown): string | undefined {
  if (endpoint === undefined) return undefined;
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new ManifestError(`agent '${name}': endpoint must be a mail address or a URL`);
  }
  if (isValidMailAddress(endpoint)) return endpoint;
  const match = /^mq9s?:\/\/[^/]+\/(.*)$/.exec(endpoint);
  if (match) {
    if (isValidMailAddress(match[1])) return match[1];
    throw new ManifestError(`agent '${name}': endpoint '${endpoint}' does not end in a valid mail address`);
  }
  // A mistyped mail address must not fall back to the default mailbox without a word.
  if (/^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(endpoint)) return undefined;
  throw new ManifestError(
    `agent '${name}': endpoint '${endpoint}' is neither a mail address, mq9://host:port/<mail address>, nor a URL`,
  );
}

/** The REGISTER body of an agent: an A2A-style card (skills = capabilities) plus the router's fields. */
export function registrationBody(
  manifest: ResolvedManifest,
  heartbeatMs: number,
  ttlSeconds: number,
): Record<string, unknown> {
  const record: ManifestRecord = {
    capabilities: manifest.capabilities,
    weight: manifest.weight,
    max_concurrency: manifest.max_concurrency,
    heartbeat_ms: heartbeatMs,
  };
  return {
    name: manifest.name,
    mailbox: manifest.mailbox,
    description: manifest.description,
    payload: manifest.description || manifest.name,
    ...(manifest.endpoint === undefined ? {} : { endpoint: manifest.endpoint }),
    tags: [...manifest.tags, ORCHESTRATED_TAG],
    skills: manifest.capabilities.map((capability) => ({
      id: capability,
      name: capability.replace(/[_.:-]+/g, " "),
      description: manifest.description,
      tags: manifest.tags,
    })),
    ttl: ttlSeconds,
    agent_manifest: record,
  };
}
