/** Allow and deny lists of subject patterns; deny wins. A bare list is an allow list. */
export type SubjectRules = readonly string[] | { allow?: readonly string[]; deny?: readonly string[] };

/**
 * What a user may publish and subscribe to, in nats-server's terms. `allowResponses` lets the user
 * publish to the reply subject of each request it received, even outside its publish allow list
 * (`true`: one reply within two minutes, as nats-server's `allow_responses: true`).
 */
export interface PermissionsOptions {
  publish?: SubjectRules;
  subscribe?: SubjectRules;
  allowResponses?: boolean | { max?: number; expiresMs?: number };
}

/** Named permission sets a user entry can name instead of spelling lists out. */
export type PermissionsProfile = "all" | "agent";

/** One user of the listener; exactly one of `password`, `token` and `nkey` is its credential. */
export interface UserOptions {
  /** The user's name: it owns what the user creates. Required with a password; defaults to the nkey. */
  user?: string;
  /** Plain text, or a bcrypt hash (`$2a$…`, `$2b$…`, `$2y$…`) as nats-server accepts. */
  password?: string;
  token?: string;
  /** An NKey user public key (`U…`); the client signs the INFO nonce with its seed. */
  nkey?: string;
  /** May read, change and delete every mailbox and registration, and reach every subject. */
  admin?: boolean;
  /** Defaults to the listener's `defaultPermissions` (or `all` for admins and when there is none). */
  permissions?: PermissionsOptions | PermissionsProfile;
  /** Mail-address patterns this user may FETCH/ACK/QUERY/DELETE as if it had created them. */
  mailboxes?: readonly string[];
}

/** The listener's `auth`: one shared secret (single-tenant), or a list of users. */
export interface AuthOptions {
  token?: string;
  user?: string;
  password?: string;
  /** Several users, each with its permissions: turns on isolation between clients. */
  users?: readonly UserOptions[];
  /** Permissions of users that name none. */
  defaultPermissions?: PermissionsOptions | PermissionsProfile;
}

/**
 * The default profile for agents: the mq9 protocol and nothing else. An agent publishes mq9
 * requests, answers requests made to it (allow responses) and subscribes to its own reply inboxes.
 */
export const AGENT_PERMISSIONS: PermissionsOptions = {
  publish: { allow: ["$mq9.AI.>"] },
  subscribe: { allow: ["_INBOX.>"] },
  allowResponses: true,
};

export const ALL_PERMISSIONS: PermissionsOptions = {};

export function permissionsOf(
  options: PermissionsOptions | PermissionsProfile | undefined,
): PermissionsOptions | undefined {
  if (options === "agent") return AGENT_PERMISSIONS;
  if (options === "all") return ALL_PERMISSIONS;
  return options;
}
