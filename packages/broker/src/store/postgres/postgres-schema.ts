/**
 * The PostgreSQL store's tables, as numbered migrations: migration i takes a database at version i
 * to version i + 1. Applied at start, under an advisory lock, each in its own transaction with the
 * version bump; a database at a newer version than this build knows is refused.
 *
 * Priorities are stored as their rank (0 = critical). A mailbox row carries the counter its
 * messages take their ids from (`next_id`): a SEND locks that row until it commits, so the ids of
 * one mailbox become visible in increasing order whichever node wrote them, and the counter never
 * goes back when messages are deleted or expire.
 */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `
CREATE TABLE mailboxes (
  id bigserial PRIMARY KEY,
  address text NOT NULL UNIQUE,
  ttl_s integer NOT NULL,
  description text NOT NULL,
  created_ms bigint NOT NULL,
  expires_ms bigint,
  next_id bigint NOT NULL DEFAULT 0
);
CREATE INDEX mailboxes_by_expiry ON mailboxes (expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE messages (
  mbox bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
  msg_id bigint NOT NULL,
  priority smallint NOT NULL,
  msg_key text,
  tags jsonb,
  header bytea,
  payload bytea NOT NULL,
  created_ms bigint NOT NULL,
  expires_ms bigint,
  PRIMARY KEY (mbox, msg_id)
);
-- Claims and reads walk one mailbox's classes in id order.
CREATE INDEX messages_by_class ON messages (mbox, priority, msg_id);
CREATE UNIQUE INDEX messages_by_key ON messages (mbox, msg_key) WHERE msg_key IS NOT NULL;
CREATE INDEX messages_by_expiry ON messages (expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE delayed (
  id bigserial PRIMARY KEY,
  mbox bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
  due_ms bigint NOT NULL,
  priority smallint NOT NULL,
  msg_key text,
  tags jsonb,
  header bytea,
  payload bytea NOT NULL,
  expires_ms bigint
);
CREATE INDEX delayed_by_due ON delayed (due_ms);
CREATE INDEX delayed_by_mailbox ON delayed (mbox);

-- cursorN: every live message of class N below it is ACKed by the group. deliveredN: the highest
-- id of class N handed out; every live message between the two has a row in deliveries.
CREATE TABLE groups (
  mbox bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
  name text NOT NULL,
  cursor0 bigint NOT NULL,
  cursor1 bigint NOT NULL,
  cursor2 bigint NOT NULL,
  delivered0 bigint NOT NULL,
  delivered1 bigint NOT NULL,
  delivered2 bigint NOT NULL,
  next_batch bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (mbox, name)
);

-- What a group was handed at or above its cursors: leased (until lease_until_ms) or ACKed.
-- A claim's messages share a batch; pos is their place in it (an ACK covers the ones before).
CREATE TABLE deliveries (
  mbox bigint NOT NULL,
  grp text NOT NULL,
  msg_id bigint NOT NULL,
  priority smallint NOT NULL,
  batch bigint NOT NULL,
  pos integer NOT NULL,
  lease_until_ms bigint NOT NULL,
  acked boolean NOT NULL DEFAULT false,
  PRIMARY KEY (mbox, grp, msg_id),
  FOREIGN KEY (mbox, grp) REFERENCES groups (mbox, name) ON DELETE CASCADE
);
CREATE INDEX deliveries_by_message ON deliveries (mbox, msg_id);
CREATE INDEX deliveries_by_batch ON deliveries (mbox, grp, batch);
-- What is in flight: expired leases to hand out again, and the lowest un-ACKed id per class.
CREATE INDEX deliveries_in_flight ON deliveries (mbox, grp, lease_until_ms) WHERE NOT acked;
`,
  // The agent registry, shared by the nodes: each keeps its search indexes in memory and follows
  // the changes (change numbers, given out under one advisory lock so they commit in order).
  `
CREATE SEQUENCE registry_changes;
CREATE TABLE registry_agents (
  mailbox text PRIMARY KEY,
  name text NOT NULL,
  body text NOT NULL,
  agent_info text NOT NULL,
  own_name boolean NOT NULL,
  tags jsonb NOT NULL,
  ttl_s integer NOT NULL,
  registered_ms bigint NOT NULL,
  last_seen_ms bigint NOT NULL,
  expires_ms bigint,
  status text,
  change bigint NOT NULL,
  docs_change bigint NOT NULL
);
CREATE INDEX registry_agents_by_change ON registry_agents (change);
CREATE INDEX registry_agents_by_name ON registry_agents (name);
CREATE INDEX registry_agents_by_expiry ON registry_agents (expires_ms) WHERE expires_ms IS NOT NULL;

CREATE TABLE registry_docs (
  id bigserial PRIMARY KEY,
  mailbox text NOT NULL REFERENCES registry_agents (mailbox) ON DELETE CASCADE,
  agent_name text NOT NULL,
  agent_description text NOT NULL,
  skill_name text NOT NULL,
  skill_description text NOT NULL,
  tags text NOT NULL,
  examples text NOT NULL,
  -- Who embeds it: the node that took the REGISTER (another one once it is long gone).
  node text NOT NULL,
  created_ms bigint NOT NULL,
  vec_model text,
  vector bytea
);
CREATE INDEX registry_docs_by_mailbox ON registry_docs (mailbox);

CREATE TABLE registry_removals (
  mailbox text NOT NULL,
  change bigint NOT NULL
);
CREATE INDEX registry_removals_by_change ON registry_removals (change);
`,
  // Who made each registration (the user name; NULL without users configured), as in SQLite.
  `
ALTER TABLE registry_agents ADD COLUMN owner text;
`,
];

export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** Holds the schema version; one row. */
export const POSTGRES_VERSION_TABLE = `
CREATE TABLE IF NOT EXISTS mq9_schema_version (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL
)`;
