/**
 * The start of mq9_claim in the migrations that redefine it: the mailbox and its horizon, expired
 * leases handed to mq9_claim_leases, the group's row locked, up to the candidates' query.
 */
const CLAIM_HEAD = `CREATE OR REPLACE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                          p_limit integer, p_max_bytes bigint, p_lease_until bigint,
                          p_member text, p_max_deliver integer, p_backoff bigint[])
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint, delivery_count integer)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  box record;
  st record;
  start_id bigint;
  hz bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT b.id, b.next_id, EXISTS (SELECT 1 FROM append_reservations r WHERE r.mbox = b.id) AS reserved INTO box
  FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now);
  IF NOT FOUND THEN RETURN; END IF;
  hz := CASE WHEN box.reserved THEN mq9_horizon(box.id) ELSE box.next_id END;
  start_id := coalesce(p_from, box.next_id);
  IF p_reset OR EXISTS (SELECT 1 FROM deliveries dl WHERE dl.mbox = box.id AND dl.grp = p_group
                          AND NOT dl.acked AND dl.lease_until_ms <= p_now) THEN
    RETURN QUERY SELECT * FROM mq9_claim_leases(p_address, p_group, start_id, p_now, p_reset, p_limit, p_max_bytes,
                                                p_lease_until, p_member, p_max_deliver, p_backoff);
    RETURN;
  END IF;
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch,
                           max_deliver, backoff_ms)
  VALUES (box.id, p_group, start_id, start_id, start_id, start_id - 1, start_id - 1, start_id - 1, 1,
          p_max_deliver, p_backoff)
  ON CONFLICT (mbox, name) DO UPDATE SET next_batch = g.next_batch + 1,
    max_deliver = coalesce(p_max_deliver, g.max_deliver), backoff_ms = coalesce(p_backoff, g.backoff_ms)
  RETURNING g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch INTO st;
  RETURN QUERY
  WITH candidates AS (`;

/**
 * The end of mq9_claim in the migrations that redefine it: the candidates placed in priority
 * then id order, cut at the claim's count and byte budget, leased and marked delivered.
 */
const CLAIM_TAIL = `  placed AS (
    SELECT c.*, row_number() OVER w AS pos,
           coalesce(sum(octet_length(c.payload)) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
           lag(c.priority) OVER w AS prev_rank
    FROM candidates c WINDOW w AS (ORDER BY c.priority, c.msg_id)),
  -- The byte budget as the SQLite store applies it: at least one message, none past the limit,
  -- and a class is not started once the budget is spent; the first row over ends the claim.
  judged AS (
    SELECT p.*, bool_or(p.pos > p_limit OR (p.before > 0 AND (p.before + octet_length(p.payload) > p_max_bytes
                  OR (p.prev_rank IS DISTINCT FROM p.priority AND p.before >= p_max_bytes)))) OVER (ORDER BY p.pos) AS over
    FROM placed p),
  taken AS (SELECT * FROM judged j WHERE NOT j.over),
  leased AS (
    INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked, member)
    SELECT box.id, p_group, t.msg_id, t.priority, st.batch, t.pos, p_lease_until, false, p_member FROM taken t
    ON CONFLICT (mbox, msg_id, grp) DO UPDATE
      SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms, member = excluded.member),
  marked AS (
    UPDATE groups g SET
      delivered0 = greatest(g.delivered0, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 0)),
      delivered1 = greatest(g.delivered1, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 1)),
      delivered2 = greatest(g.delivered2, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 2))
    WHERE g.mbox = box.id AND g.name = p_group)
  SELECT t.msg_id, t.priority, t.msg_key, t.tags, t.header, t.payload, t.created_ms, t.expires_ms, 1
  FROM taken t ORDER BY t.pos;
END
$fn$;`;

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
  // Claim and ACK as functions: one round trip each instead of one per statement of the
  // transaction. Each statement in them takes a fresh snapshot once the group's row is locked
  // (READ COMMITTED, VOLATILE), which one statement of CTEs could not: its snapshot predates the
  // lock wait, and it would miss the leases of the claim it waited for.
  `
CREATE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                          p_limit integer, p_max_bytes bigint, p_lease_until bigint)
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  st record;
  r record;
  ids bigint[] := '{}';
  ranks smallint[] := '{}';
  d bigint[];
  bytes bigint := 0;
  cur_rank integer := -1;
BEGIN
  -- Creates the group, or locks its row: claims and ACKs of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch)
  SELECT b.id, p_group, p_from, p_from, p_from, p_from - 1, p_from - 1, p_from - 1, 1 FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
  ON CONFLICT (mbox, name) DO UPDATE SET
    next_batch = g.next_batch + 1,
    cursor0 = CASE WHEN p_reset THEN excluded.cursor0 ELSE g.cursor0 END,
    cursor1 = CASE WHEN p_reset THEN excluded.cursor1 ELSE g.cursor1 END,
    cursor2 = CASE WHEN p_reset THEN excluded.cursor2 ELSE g.cursor2 END,
    delivered0 = CASE WHEN p_reset THEN excluded.delivered0 ELSE g.delivered0 END,
    delivered1 = CASE WHEN p_reset THEN excluded.delivered1 ELSE g.delivered1 END,
    delivered2 = CASE WHEN p_reset THEN excluded.delivered2 ELSE g.delivered2 END
  RETURNING g.mbox, g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch INTO st;
  IF NOT FOUND THEN RETURN; END IF;
  IF p_reset THEN
    DELETE FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group;
  END IF;
  d := ARRAY[st.delivered0, st.delivered1, st.delivered2];
  -- Past the highest id handed out, plus what an expired lease gave back; every other live
  -- message between the cursor and that id is leased or ACKed (it has a delivery row).
  FOR r IN
    SELECT * FROM (
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 0 AND m.msg_id > st.delivered0 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 1 AND m.msg_id > st.delivered1 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 2 AND m.msg_id > st.delivered2 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms FROM deliveries dl
         JOIN messages m ON m.mbox = dl.mbox AND m.msg_id = dl.msg_id
        WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND dl.lease_until_ms <= p_now
          AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY dl.priority, dl.msg_id LIMIT p_limit)
    ) c ORDER BY c.priority, c.msg_id
  LOOP
    -- The byte budget as the SQLite store applies it: at least one message, and a class is not
    -- started once the budget is spent.
    EXIT WHEN cardinality(ids) >= p_limit;
    IF r.priority <> cur_rank THEN
      EXIT WHEN bytes > 0 AND bytes >= p_max_bytes;
      cur_rank := r.priority;
    END IF;
    EXIT WHEN bytes > 0 AND bytes + octet_length(r.payload) > p_max_bytes;
    bytes := bytes + octet_length(r.payload);
    ids := ids || r.msg_id;
    ranks := ranks || r.priority;
    d[r.priority + 1] := greatest(d[r.priority + 1], r.msg_id);
    msg_id := r.msg_id; priority := r.priority; msg_key := r.msg_key; tags := r.tags; header := r.header;
    payload := r.payload; created_ms := r.created_ms; expires_ms := r.expires_ms;
    RETURN NEXT;
  END LOOP;
  IF cardinality(ids) = 0 THEN RETURN; END IF;
  INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked)
  SELECT st.mbox, p_group, t.id, t.rank, st.batch, t.pos, p_lease_until, false
  FROM unnest(ids, ranks) WITH ORDINALITY AS t(id, rank, pos)
  ON CONFLICT (mbox, grp, msg_id) DO UPDATE
    SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms;
  UPDATE groups g SET delivered0 = d[1], delivered1 = d[2], delivered2 = d[3]
  WHERE g.mbox = st.mbox AND g.name = p_group;
END
$fn$;

CREATE FUNCTION mq9_ack(p_address text, p_group text, p_msg_id bigint, p_now bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  st record;
  target record;
  state record;
  c bigint[];
  nxt bigint[];
  r record;
BEGIN
  SELECT g.mbox, g.cursor0, g.cursor1, g.cursor2, g.delivered0, g.delivered1, g.delivered2 INTO st
  FROM groups g JOIN mailboxes b ON b.id = g.mbox
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now) AND g.name = p_group
  FOR UPDATE OF g;
  IF NOT FOUND THEN RETURN false; END IF;
  c := ARRAY[st.cursor0, st.cursor1, st.cursor2];
  SELECT dl.batch, dl.pos INTO target FROM deliveries dl
  WHERE dl.mbox = st.mbox AND dl.grp = p_group AND dl.msg_id = p_msg_id AND NOT dl.acked;
  IF NOT FOUND THEN
    -- Nothing to change: true when the message was ACKed already (a row, or below its cursor).
    SELECT (SELECT dl.acked FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group AND dl.msg_id = p_msg_id) AS acked,
           (SELECT m.priority FROM messages m WHERE m.mbox = st.mbox AND m.msg_id = p_msg_id) AS priority
    INTO state;
    IF state.acked IS NOT NULL THEN RETURN state.acked; END IF;
    IF state.priority IS NOT NULL THEN RETURN p_msg_id < c[state.priority + 1]; END IF;
    RETURN p_msg_id < least(c[1], c[2], c[3]);
  END IF;
  -- Where the cursors go once the message and every one before it in its claim are ACKed:
  -- to the lowest live message still in flight, or past the highest one handed out.
  nxt := ARRAY[st.delivered0 + 1, st.delivered1 + 1, st.delivered2 + 1];
  FOR r IN
    SELECT dl.priority, min(dl.msg_id) AS lowest FROM deliveries dl
      JOIN messages m ON m.mbox = dl.mbox AND m.msg_id = dl.msg_id
    WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND NOT (dl.batch = target.batch AND dl.pos <= target.pos)
      AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
    GROUP BY dl.priority
  LOOP
    nxt[r.priority + 1] := least(nxt[r.priority + 1], r.lowest);
  END LOOP;
  FOR i IN 1..3 LOOP
    nxt[i] := greatest(nxt[i], c[i]);
  END LOOP;
  -- Rows the cursors pass are deleted (ACKed ones among them need no mark); the covered rows
  -- above them are marked ACKed, so they are not delivered again.
  DELETE FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group
    AND ((dl.priority = 0 AND dl.msg_id < nxt[1]) OR (dl.priority = 1 AND dl.msg_id < nxt[2]) OR (dl.priority = 2 AND dl.msg_id < nxt[3]));
  UPDATE deliveries dl SET acked = true
  WHERE dl.mbox = st.mbox AND dl.grp = p_group AND dl.batch = target.batch AND dl.pos <= target.pos AND NOT dl.acked;
  IF (c[1], c[2], c[3]) IS DISTINCT FROM (nxt[1], nxt[2], nxt[3]) THEN
    UPDATE groups g SET cursor0 = nxt[1], cursor1 = nxt[2], cursor2 = nxt[3]
    WHERE g.mbox = st.mbox AND g.name = p_group;
  END IF;
  RETURN true;
END
$fn$;
`,
  // Who made each registration (the user name; NULL without users configured), as in SQLite.
  `
ALTER TABLE registry_agents ADD COLUMN owner text;
`,
  // Lighter hot writes. A SEND's rows and a claim's lease rows no longer check a foreign key each
  // (what the cascades did, a trigger does once per deleted set of mailboxes), and a lease row
  // goes into two indexes instead of four: the key leads with the message (what deleting a
  // message looks up), and an ACK finds its claim's rows among the group's un-ACKed ones.
  `
ALTER TABLE messages DROP CONSTRAINT messages_mbox_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_mbox_grp_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
ALTER TABLE deliveries ADD PRIMARY KEY (mbox, msg_id, grp);
DROP INDEX deliveries_by_message;
DROP INDEX deliveries_by_batch;

CREATE FUNCTION mq9_mailboxes_gone() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM messages m USING gone WHERE m.mbox = gone.id;
  DELETE FROM deliveries d USING gone WHERE d.mbox = gone.id;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER mailboxes_gone AFTER DELETE ON mailboxes REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION mq9_mailboxes_gone();
`,
  // ACKs without the group's lock, so a claim and an ACK of one group no longer wait for each
  // other's commit. A message of a group is ACKed when it is below the class cursor, or at most
  // the highest id handed out and without a lease row: an ACK deletes its claim's rows (it used to
  // mark them and move the cursors under the group's lock). A claim still locks the group row, so
  // two claims never hand out one lease; it takes an expired lease again only if the row is still
  // there and still expired once it is locked, which is how it loses a race with an ACK.
  `
DELETE FROM deliveries WHERE acked;

CREATE OR REPLACE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                                     p_limit integer, p_max_bytes bigint, p_lease_until bigint)
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  st record;
  r record;
  ids bigint[] := '{}';
  ranks smallint[] := '{}';
  places integer[] := '{}';
  d bigint[];
  bytes bigint := 0;
  taken integer := 0;
  cur_rank integer := -1;
BEGIN
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch)
  SELECT b.id, p_group, p_from, p_from, p_from, p_from - 1, p_from - 1, p_from - 1, 1 FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
  ON CONFLICT (mbox, name) DO UPDATE SET
    next_batch = g.next_batch + 1,
    cursor0 = CASE WHEN p_reset THEN excluded.cursor0 ELSE g.cursor0 END,
    cursor1 = CASE WHEN p_reset THEN excluded.cursor1 ELSE g.cursor1 END,
    cursor2 = CASE WHEN p_reset THEN excluded.cursor2 ELSE g.cursor2 END,
    delivered0 = CASE WHEN p_reset THEN excluded.delivered0 ELSE g.delivered0 END,
    delivered1 = CASE WHEN p_reset THEN excluded.delivered1 ELSE g.delivered1 END,
    delivered2 = CASE WHEN p_reset THEN excluded.delivered2 ELSE g.delivered2 END
  RETURNING g.mbox, g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch INTO st;
  IF NOT FOUND THEN RETURN; END IF;
  IF p_reset THEN
    DELETE FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group;
  END IF;
  d := ARRAY[st.delivered0, st.delivered1, st.delivered2];
  -- Past the highest id handed out, plus what an expired lease gave back.
  FOR r IN
    SELECT * FROM (
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 0 AND m.msg_id > st.delivered0 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 1 AND m.msg_id > st.delivered1 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 2 AND m.msg_id > st.delivered2 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, true AS again
        FROM deliveries dl JOIN messages m ON m.mbox = dl.mbox AND m.msg_id = dl.msg_id
        WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND dl.lease_until_ms <= p_now
          AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY dl.priority, dl.msg_id LIMIT p_limit)
    ) c ORDER BY c.priority, c.msg_id
  LOOP
    -- The byte budget as the SQLite store applies it: at least one message, and a class is not
    -- started once the budget is spent.
    EXIT WHEN taken >= p_limit;
    IF r.priority <> cur_rank THEN
      EXIT WHEN bytes > 0 AND bytes >= p_max_bytes;
      cur_rank := r.priority;
    END IF;
    EXIT WHEN bytes > 0 AND bytes + octet_length(r.payload) > p_max_bytes;
    IF r.again THEN
      -- The ACK of that lease may have deleted its row since this loop's snapshot.
      UPDATE deliveries dl SET batch = st.batch, pos = taken + 1, lease_until_ms = p_lease_until
      WHERE dl.mbox = st.mbox AND dl.msg_id = r.msg_id AND dl.grp = p_group AND NOT dl.acked
        AND dl.lease_until_ms <= p_now;
      CONTINUE WHEN NOT FOUND;
    ELSE
      ids := ids || r.msg_id;
      ranks := ranks || r.priority;
      places := places || (taken + 1);
      d[r.priority + 1] := greatest(d[r.priority + 1], r.msg_id);
    END IF;
    taken := taken + 1;
    bytes := bytes + octet_length(r.payload);
    msg_id := r.msg_id; priority := r.priority; msg_key := r.msg_key; tags := r.tags; header := r.header;
    payload := r.payload; created_ms := r.created_ms; expires_ms := r.expires_ms;
    RETURN NEXT;
  END LOOP;
  IF cardinality(ids) = 0 THEN RETURN; END IF;
  INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked)
  SELECT st.mbox, p_group, t.id, t.rank, st.batch, t.pos, p_lease_until, false
  FROM unnest(ids, ranks, places) AS t(id, rank, pos)
  ON CONFLICT (mbox, msg_id, grp) DO UPDATE
    SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms;
  UPDATE groups g SET delivered0 = d[1], delivered1 = d[2], delivered2 = d[3]
  WHERE g.mbox = st.mbox AND g.name = p_group;
END
$fn$;

CREATE OR REPLACE FUNCTION mq9_ack(p_address text, p_group text, p_msg_id bigint, p_now bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  st record;
  target record;
  rank smallint;
  hit boolean;
BEGIN
  SELECT g.mbox, g.cursor0, g.cursor1, g.cursor2, g.delivered0, g.delivered1, g.delivered2 INTO st
  FROM groups g JOIN mailboxes b ON b.id = g.mbox
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now) AND g.name = p_group;
  IF NOT FOUND THEN RETURN false; END IF;
  -- Again when a claim took the lease anew between finding its row and deleting its claim's rows.
  FOR attempt IN 1..3 LOOP
    SELECT dl.batch, dl.pos INTO target FROM deliveries dl
    WHERE dl.mbox = st.mbox AND dl.msg_id = p_msg_id AND dl.grp = p_group AND NOT dl.acked;
    IF NOT FOUND THEN
      -- No lease: ACKed already when the group was handed it, refused when it never was.
      SELECT m.priority INTO rank FROM messages m WHERE m.mbox = st.mbox AND m.msg_id = p_msg_id;
      IF FOUND THEN
        RETURN p_msg_id <= (ARRAY[st.delivered0, st.delivered1, st.delivered2])[rank + 1];
      END IF;
      RETURN p_msg_id < least(st.cursor0, st.cursor1, st.cursor2);
    END IF;
    -- The message and every one before it in its claim.
    WITH gone AS (
      DELETE FROM deliveries dl
      WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND dl.batch = target.batch AND dl.pos <= target.pos
      RETURNING dl.msg_id)
    SELECT coalesce(bool_or(gone.msg_id = p_msg_id), false) INTO hit FROM gone;
    IF hit THEN RETURN true; END IF;
  END LOOP;
  RETURN true;
END
$fn$;
`,
  // A claim commits without waiting for its WAL flush. Losing one in a crash only means its
  // messages are delivered again, which at-least-once allows; an ACK still waits for its flush,
  // which covers every claim committed before it, so nothing ACKed can outlive its claim's
  // loss. The setting is made here, for the claim's own transaction, and not in a SET clause:
  // PostgreSQL restores those when the function returns, before the commit that reads it.
  `
ALTER FUNCTION mq9_claim(text, text, bigint, bigint, boolean, integer, bigint, bigint) RENAME TO mq9_claim_leases;

CREATE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                          p_limit integer, p_max_bytes bigint, p_lease_until bigint)
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY SELECT * FROM mq9_claim_leases(p_address, p_group, p_from, p_now, p_reset, p_limit, p_max_bytes, p_lease_until);
END
$fn$;
`,
  // The usual claim in one set-based statement: when no lease of the group has run out (and no
  // reset), it only takes messages past the highest ids handed out, so the byte budget, the
  // leases and the new high marks are window functions and two writes over one selection, and
  // the rows are copied once instead of row by row through a loop and again by a wrapper. A
  // NULL p_from places a new group at the mailbox's next id (deliver "latest"), so a FETCH needs
  // no round trip of its own for that. Expired leases and resets take mq9_claim_leases.
  `
CREATE OR REPLACE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                                     p_limit integer, p_max_bytes bigint, p_lease_until bigint)
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  box record;
  st record;
  start_id bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT b.id, b.next_id INTO box FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now);
  IF NOT FOUND THEN RETURN; END IF;
  start_id := coalesce(p_from, box.next_id);
  IF p_reset OR EXISTS (SELECT 1 FROM deliveries dl WHERE dl.mbox = box.id AND dl.grp = p_group
                          AND NOT dl.acked AND dl.lease_until_ms <= p_now) THEN
    RETURN QUERY SELECT * FROM mq9_claim_leases(p_address, p_group, start_id, p_now, p_reset, p_limit, p_max_bytes, p_lease_until);
    RETURN;
  END IF;
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch)
  VALUES (box.id, p_group, start_id, start_id, start_id, start_id - 1, start_id - 1, start_id - 1, 1)
  ON CONFLICT (mbox, name) DO UPDATE SET next_batch = g.next_batch + 1
  RETURNING g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch INTO st;
  RETURN QUERY
  WITH candidates AS (
    -- Per class, the next messages past its highest id handed out.
    SELECT picked.* FROM (VALUES (0::smallint, st.delivered0), (1::smallint, st.delivered1), (2::smallint, st.delivered2))
      AS k(rank, past),
    LATERAL (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
             FROM messages m
             WHERE m.mbox = box.id AND m.priority = k.rank AND m.msg_id > k.past
               AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
             ORDER BY m.msg_id LIMIT p_limit) picked),
  placed AS (
    SELECT c.*, row_number() OVER w AS pos,
           coalesce(sum(octet_length(c.payload)) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
           lag(c.priority) OVER w AS prev_rank
    FROM candidates c WINDOW w AS (ORDER BY c.priority, c.msg_id)),
  -- The byte budget as the SQLite store applies it: at least one message, none past the limit,
  -- and a class is not started once the budget is spent; the first row over ends the claim.
  judged AS (
    SELECT p.*, bool_or(p.pos > p_limit OR (p.before > 0 AND (p.before + octet_length(p.payload) > p_max_bytes
                  OR (p.prev_rank IS DISTINCT FROM p.priority AND p.before >= p_max_bytes)))) OVER (ORDER BY p.pos) AS over
    FROM placed p),
  taken AS (SELECT * FROM judged j WHERE NOT j.over),
  leased AS (
    INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked)
    SELECT box.id, p_group, t.msg_id, t.priority, st.batch, t.pos, p_lease_until, false FROM taken t
    ON CONFLICT (mbox, msg_id, grp) DO UPDATE
      SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms),
  marked AS (
    UPDATE groups g SET
      delivered0 = greatest(g.delivered0, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 0)),
      delivered1 = greatest(g.delivered1, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 1)),
      delivered2 = greatest(g.delivered2, (SELECT max(t.msg_id) FROM taken t WHERE t.priority = 2))
    WHERE g.mbox = box.id AND g.name = p_group)
  SELECT t.msg_id, t.priority, t.msg_key, t.tags, t.header, t.payload, t.created_ms, t.expires_ms
  FROM taken t ORDER BY t.pos;
END
$fn$;
`,
  // Names the mq9 cluster this schema belongs to (a standby replica has the same name): a node
  // answers other nodes' roll call with it, so a second mq9 cluster on one NATS account is found.
  `
CREATE TABLE mq9_cluster (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  id text NOT NULL
);
INSERT INTO mq9_cluster (id) VALUES (md5(random()::text || clock_timestamp()::text));
`,
  // Who created each mailbox (the user name; NULL without users configured), as in SQLite: without
  // it a user could not read its own mailboxes on PostgreSQL, and no owner survived a restart.
  `
ALTER TABLE mailboxes ADD COLUMN owner text;
`,
  // The idempotency keys of SENDs (mq9-idempotency-key, Nats-Msg-Id), written in the SEND's transaction: a
  // repeat before until_ms stores nothing and is answered with msg_id (-1 for a delayed message).
  // Swept with expiry, and gone with their mailbox.
  `
CREATE TABLE send_keys (
  mbox bigint NOT NULL REFERENCES mailboxes (id) ON DELETE CASCADE,
  id_key text NOT NULL,
  msg_id bigint NOT NULL,
  until_ms bigint NOT NULL,
  PRIMARY KEY (mbox, id_key)
);
CREATE INDEX send_keys_by_expiry ON send_keys (until_ms);
`,
  // The reply inboxes bound to users (with users configured, on a broker of its own: a cluster's
  // inboxes are nats-server's), so that after a restart no other user claims one before its owner
  // reconnects. The broker replaces the whole set when it changes; inboxes whose grace ended leave it.
  `
CREATE TABLE inbox_bindings (
  id text PRIMARY KEY,
  username text NOT NULL
);
`,
  // Delivery limits (issue: poison messages). A mailbox's default limit and dead-letter mailbox; a
  // group's limit, backoff and dead-letter count; per lease row its delivery count, the member
  // holding it, when a NAK lets it go again, the last failure's reason, and whether a terminal NAK
  // sent it to dead letters. A lease whose count reached the limit is not handed out again when it
  // runs out: the dead-letter sweep takes it. A NAKed row leaves its claim's batch (-1), so an ACK
  // of a later message of that claim does not cover it. The claim functions gain the member and the
  // FETCH's policy, and return each message's delivery count.
  `
ALTER TABLE mailboxes ADD COLUMN max_deliver integer, ADD COLUMN dead_letter text;
ALTER TABLE groups ADD COLUMN max_deliver integer, ADD COLUMN backoff_ms bigint[],
  ADD COLUMN dead_lettered bigint NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN delivery_count integer NOT NULL DEFAULT 1, ADD COLUMN retry_at_ms bigint,
  ADD COLUMN member text, ADD COLUMN reason text, ADD COLUMN dead boolean NOT NULL DEFAULT false;
CREATE INDEX deliveries_dead ON deliveries (mbox) WHERE dead;

-- The wait after a message's n-th failed delivery: the n-th step, the last one repeating.
CREATE FUNCTION mq9_backoff(p_steps bigint[], p_count integer) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN p_steps IS NULL OR cardinality(p_steps) = 0 THEN 0
              ELSE p_steps[least(greatest(p_count, 1), cardinality(p_steps))] END
$fn$;

DROP FUNCTION mq9_claim(text, text, bigint, bigint, boolean, integer, bigint, bigint);
DROP FUNCTION mq9_claim_leases(text, text, bigint, bigint, boolean, integer, bigint, bigint);

CREATE FUNCTION mq9_claim_leases(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                                 p_limit integer, p_max_bytes bigint, p_lease_until bigint,
                                 p_member text, p_max_deliver integer, p_backoff bigint[])
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint, delivery_count integer)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  st record;
  r record;
  ids bigint[] := '{}';
  ranks smallint[] := '{}';
  places integer[] := '{}';
  d bigint[];
  bytes bigint := 0;
  taken integer := 0;
  cur_rank integer := -1;
  lim integer;
  count_now integer;
BEGIN
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch,
                           max_deliver, backoff_ms)
  SELECT b.id, p_group, p_from, p_from, p_from, p_from - 1, p_from - 1, p_from - 1, 1, p_max_deliver, p_backoff
  FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
  ON CONFLICT (mbox, name) DO UPDATE SET
    next_batch = g.next_batch + 1,
    max_deliver = coalesce(p_max_deliver, g.max_deliver),
    backoff_ms = coalesce(p_backoff, g.backoff_ms),
    cursor0 = CASE WHEN p_reset THEN excluded.cursor0 ELSE g.cursor0 END,
    cursor1 = CASE WHEN p_reset THEN excluded.cursor1 ELSE g.cursor1 END,
    cursor2 = CASE WHEN p_reset THEN excluded.cursor2 ELSE g.cursor2 END,
    delivered0 = CASE WHEN p_reset THEN excluded.delivered0 ELSE g.delivered0 END,
    delivered1 = CASE WHEN p_reset THEN excluded.delivered1 ELSE g.delivered1 END,
    delivered2 = CASE WHEN p_reset THEN excluded.delivered2 ELSE g.delivered2 END
  RETURNING g.mbox, g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch, g.max_deliver,
            g.backoff_ms INTO st;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT coalesce(st.max_deliver, b.max_deliver, 0) INTO lim FROM mailboxes b WHERE b.id = st.mbox;
  IF p_reset THEN
    DELETE FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group;
  END IF;
  d := ARRAY[st.delivered0, st.delivered1, st.delivered2];
  -- Past the highest id handed out, plus what an expired lease gave back once its backoff is over
  -- and while it has deliveries left.
  FOR r IN
    SELECT * FROM (
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 0 AND m.msg_id > st.delivered0 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 1 AND m.msg_id > st.delivered1 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 2 AND m.msg_id > st.delivered2 AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, true AS again
        FROM deliveries dl JOIN messages m ON m.mbox = dl.mbox AND m.msg_id = dl.msg_id
        WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND dl.lease_until_ms <= p_now
          AND NOT dl.dead AND (lim = 0 OR dl.delivery_count < lim)
          AND coalesce(dl.retry_at_ms, dl.lease_until_ms + mq9_backoff(st.backoff_ms, dl.delivery_count)) <= p_now
          AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY dl.priority, dl.msg_id LIMIT p_limit)
    ) c ORDER BY c.priority, c.msg_id
  LOOP
    -- The byte budget as the SQLite store applies it: at least one message, and a class is not
    -- started once the budget is spent.
    EXIT WHEN taken >= p_limit;
    IF r.priority <> cur_rank THEN
      EXIT WHEN bytes > 0 AND bytes >= p_max_bytes;
      cur_rank := r.priority;
    END IF;
    EXIT WHEN bytes > 0 AND bytes + octet_length(r.payload) > p_max_bytes;
    IF r.again THEN
      -- The ACK of that lease may have deleted its row since this loop's snapshot.
      UPDATE deliveries dl SET batch = st.batch, pos = taken + 1, lease_until_ms = p_lease_until,
        delivery_count = dl.delivery_count + 1, retry_at_ms = NULL, member = p_member
      WHERE dl.mbox = st.mbox AND dl.msg_id = r.msg_id AND dl.grp = p_group AND NOT dl.acked
        AND dl.lease_until_ms <= p_now AND NOT dl.dead
      RETURNING dl.delivery_count INTO count_now;
      CONTINUE WHEN NOT FOUND;
    ELSE
      ids := ids || r.msg_id;
      ranks := ranks || r.priority;
      places := places || (taken + 1);
      d[r.priority + 1] := greatest(d[r.priority + 1], r.msg_id);
      count_now := 1;
    END IF;
    taken := taken + 1;
    bytes := bytes + octet_length(r.payload);
    msg_id := r.msg_id; priority := r.priority; msg_key := r.msg_key; tags := r.tags; header := r.header;
    payload := r.payload; created_ms := r.created_ms; expires_ms := r.expires_ms; delivery_count := count_now;
    RETURN NEXT;
  END LOOP;
  IF cardinality(ids) = 0 THEN RETURN; END IF;
  INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked, member)
  SELECT st.mbox, p_group, t.id, t.rank, st.batch, t.pos, p_lease_until, false, p_member
  FROM unnest(ids, ranks, places) AS t(id, rank, pos)
  ON CONFLICT (mbox, msg_id, grp) DO UPDATE
    SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms, member = excluded.member;
  UPDATE groups g SET delivered0 = d[1], delivered1 = d[2], delivered2 = d[3]
  WHERE g.mbox = st.mbox AND g.name = p_group;
END
$fn$;

CREATE FUNCTION mq9_claim(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                          p_limit integer, p_max_bytes bigint, p_lease_until bigint,
                          p_member text, p_max_deliver integer, p_backoff bigint[])
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint, delivery_count integer)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  box record;
  st record;
  start_id bigint;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT b.id, b.next_id INTO box FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now);
  IF NOT FOUND THEN RETURN; END IF;
  start_id := coalesce(p_from, box.next_id);
  IF p_reset OR EXISTS (SELECT 1 FROM deliveries dl WHERE dl.mbox = box.id AND dl.grp = p_group
                          AND NOT dl.acked AND dl.lease_until_ms <= p_now) THEN
    RETURN QUERY SELECT * FROM mq9_claim_leases(p_address, p_group, start_id, p_now, p_reset, p_limit, p_max_bytes,
                                                p_lease_until, p_member, p_max_deliver, p_backoff);
    RETURN;
  END IF;
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch,
                           max_deliver, backoff_ms)
  VALUES (box.id, p_group, start_id, start_id, start_id, start_id - 1, start_id - 1, start_id - 1, 1,
          p_max_deliver, p_backoff)
  ON CONFLICT (mbox, name) DO UPDATE SET next_batch = g.next_batch + 1,
    max_deliver = coalesce(p_max_deliver, g.max_deliver), backoff_ms = coalesce(p_backoff, g.backoff_ms)
  RETURNING g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch INTO st;
  RETURN QUERY
  WITH candidates AS (
    -- Per class, the next messages past its highest id handed out.
    SELECT picked.* FROM (VALUES (0::smallint, st.delivered0), (1::smallint, st.delivered1), (2::smallint, st.delivered2))
      AS k(rank, past),
    LATERAL (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
             FROM messages m
             WHERE m.mbox = box.id AND m.priority = k.rank AND m.msg_id > k.past
               AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
             ORDER BY m.msg_id LIMIT p_limit) picked),
${CLAIM_TAIL}

CREATE OR REPLACE FUNCTION mq9_ack(p_address text, p_group text, p_msg_id bigint, p_now bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  st record;
  target record;
  rank smallint;
  hit boolean;
BEGIN
  SELECT g.mbox, g.cursor0, g.cursor1, g.cursor2, g.delivered0, g.delivered1, g.delivered2 INTO st
  FROM groups g JOIN mailboxes b ON b.id = g.mbox
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now) AND g.name = p_group;
  IF NOT FOUND THEN RETURN false; END IF;
  -- Again when a claim took the lease anew between finding its row and deleting its claim's rows.
  FOR attempt IN 1..3 LOOP
    SELECT dl.batch, dl.pos INTO target FROM deliveries dl
    WHERE dl.mbox = st.mbox AND dl.msg_id = p_msg_id AND dl.grp = p_group AND NOT dl.acked;
    IF NOT FOUND THEN
      -- No lease: ACKed already when the group was handed it, refused when it never was.
      SELECT m.priority INTO rank FROM messages m WHERE m.mbox = st.mbox AND m.msg_id = p_msg_id;
      IF FOUND THEN
        RETURN p_msg_id <= (ARRAY[st.delivered0, st.delivered1, st.delivered2])[rank + 1];
      END IF;
      RETURN p_msg_id < least(st.cursor0, st.cursor1, st.cursor2);
    END IF;
    -- The message and every one before it in its claim; a message given back (batch -1) alone.
    WITH gone AS (
      DELETE FROM deliveries dl
      WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked
        AND (dl.msg_id = p_msg_id OR (target.batch >= 0 AND dl.batch = target.batch AND dl.pos <= target.pos))
      RETURNING dl.msg_id)
    SELECT coalesce(bool_or(gone.msg_id = p_msg_id), false) INTO hit FROM gone;
    IF hit THEN RETURN true; END IF;
  END LOOP;
  RETURN true;
END
$fn$;
`,
  // What each registration describes: an agent (every row before) or an MCP server, as in SQLite.
  `
ALTER TABLE registry_agents ADD COLUMN kind text NOT NULL DEFAULT 'agent';
`,
  // SEND batches reserve their ids in a transaction of their own, committed without waiting for
  // its flush (a crash that loses it loses no stored message: their commit flushes it first),
  // and store their messages in a second one that deletes the reservation. So a mailbox's
  // counter row is locked for the reservation only, and the commits of several nodes' batches
  // overlap and share their WAL flushes instead of taking turns on the row. Readers stop at a
  // mailbox's horizon: below the first id of a reservation still pending, ids may still appear.
  // A reservation is given up once no append can follow it: its connection is gone (a node that
  // died, a server restart) or it is 10 s old (a node that hangs); an append that comes after
  // finds it gone, stores nothing and fails.
  `
CREATE TABLE append_reservations (
  mbox bigint NOT NULL,
  first_id bigint NOT NULL,
  made timestamptz NOT NULL DEFAULT clock_timestamp(),
  pid integer NOT NULL DEFAULT pg_backend_pid(),
  PRIMARY KEY (mbox, first_id)
);

-- Drops the reservations of one mailbox (all when NULL) that no append can follow any more.
CREATE FUNCTION mq9_drop_dead_reservations(p_mbox bigint) RETURNS void LANGUAGE sql VOLATILE AS $fn$
  DELETE FROM append_reservations x
  WHERE (p_mbox IS NULL OR x.mbox = p_mbox)
    AND (x.made < pg_postmaster_start_time() OR x.made <= clock_timestamp() - interval '10 seconds'
         OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = x.pid));
$fn$;

-- The lowest id of a mailbox a reader may not pass yet: below it every id is stored or never will
-- be. Reservations pending for over a second are checked, and dropped when dead.
CREATE FUNCTION mq9_horizon(p_mbox bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  h record;
BEGIN
  FOR attempt IN 1..2 LOOP
    SELECT b.next_id, r.first_id, r.made INTO h FROM mailboxes b
      LEFT JOIN LATERAL (SELECT x.first_id, x.made FROM append_reservations x WHERE x.mbox = b.id
                         ORDER BY x.first_id LIMIT 1) r ON true
    WHERE b.id = p_mbox;
    IF NOT FOUND THEN RETURN 0; END IF;
    IF h.first_id IS NULL THEN RETURN h.next_id; END IF;
    IF attempt = 2 OR (h.made > clock_timestamp() - interval '1 second' AND h.made >= pg_postmaster_start_time()) THEN
      RETURN least(h.first_id, h.next_id);
    END IF;
    PERFORM mq9_drop_dead_reservations(p_mbox);
  END LOOP;
  RETURN 0;
END
$fn$;

-- A SEND batch of plain messages in one call and two transactions. The first reserves
-- p_counts[i] ids in each live mailbox p_addresses[i] (their rows locked in id order, so two
-- reservations never wait on each other in a cycle) and commits without waiting for its flush;
-- the second gives the reservations up and stores the rows, and waits for it. Rows come as arrays
-- (p_box: each one's mailbox, 1-based into p_addresses), payloads and headers as one binary value
-- each, cut by offset and length. Returns each mailbox's first id, NULL where it was missing or
-- deleted meanwhile (nothing of the batch stored there). A reservation found gone (given up as
-- dead) fails the second transaction: nothing stored.
CREATE PROCEDURE mq9_send(p_addresses text[], p_counts integer[], p_now bigint, p_box integer[],
                          p_priorities smallint[], p_tags text[], p_hlen integer[], p_headers bytea,
                          p_plen integer[], p_payloads bytea, p_created bigint[], p_expires bigint[],
                          p_hat integer[], p_pat integer[], INOUT firsts bigint[] DEFAULT NULL)
LANGUAGE plpgsql AS $fn$
DECLARE
  boxes bigint[];
  reserved integer;
  dropped integer;
  held bigint[];
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM 1 FROM (SELECT b.id FROM mailboxes b
                  WHERE b.address = ANY (p_addresses) AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
                  ORDER BY b.id FOR NO KEY UPDATE) locked;
  WITH bumped AS (
    UPDATE mailboxes b SET next_id = b.next_id + q.n
    FROM unnest(p_addresses, p_counts) AS q(address, n)
    WHERE b.address = q.address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
    RETURNING b.address, b.id, b.next_id - q.n AS first),
  kept AS (INSERT INTO append_reservations (mbox, first_id) SELECT bumped.id, bumped.first FROM bumped)
  SELECT array_agg(bumped.id ORDER BY q.i), array_agg(bumped.first ORDER BY q.i) INTO boxes, firsts
  FROM unnest(p_addresses) WITH ORDINALITY AS q(address, i) LEFT JOIN bumped ON bumped.address = q.address;
  SELECT count(*) INTO reserved FROM unnest(boxes) x WHERE x IS NOT NULL;
  IF reserved = 0 THEN RETURN; END IF;
  COMMIT;
  DELETE FROM append_reservations r USING unnest(boxes, firsts) AS q(box, first)
  WHERE r.mbox = q.box AND r.first_id = q.first;
  GET DIAGNOSTICS dropped = ROW_COUNT;
  IF dropped <> reserved THEN
    RAISE EXCEPTION 'the ids reserved for this SEND were given up before its messages were stored (the database answered too slowly); nothing was stored, send again';
  END IF;
  -- A mailbox deleted from now on waits for this commit, then takes these messages with it.
  SELECT coalesce(array_agg(k.id), '{}') INTO held
  FROM (SELECT b.id FROM mailboxes b WHERE b.id = ANY (boxes) FOR KEY SHARE) k;
  INSERT INTO messages (mbox, msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms)
  SELECT boxes[t.box], firsts[t.box] + row_number() OVER (PARTITION BY t.box ORDER BY t.ord) - 1, t.priority, NULL,
         t.tags::jsonb, CASE WHEN t.hlen < 0 THEN NULL ELSE substring(p_headers FROM t.hat + 1 FOR t.hlen) END,
         substring(p_payloads FROM t.pat + 1 FOR t.plen), t.created, t.expires
  FROM unnest(p_box, p_priorities, p_tags, p_hlen, p_plen, p_created, p_expires, p_hat, p_pat) WITH ORDINALITY
    AS t(box, priority, tags, hlen, plen, created, expires, hat, pat, ord)
  WHERE boxes[t.box] = ANY (held);
  SELECT array_agg(CASE WHEN boxes[i] = ANY (held) THEN firsts[i] END ORDER BY i) INTO firsts
  FROM generate_subscripts(boxes, 1) AS i;
END
$fn$;

CREATE OR REPLACE FUNCTION mq9_claim_leases(p_address text, p_group text, p_from bigint, p_now bigint, p_reset boolean,
                                 p_limit integer, p_max_bytes bigint, p_lease_until bigint,
                                 p_member text, p_max_deliver integer, p_backoff bigint[])
RETURNS TABLE (msg_id bigint, priority smallint, msg_key text, tags jsonb, header bytea, payload bytea,
               created_ms bigint, expires_ms bigint, delivery_count integer)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  st record;
  r record;
  ids bigint[] := '{}';
  ranks smallint[] := '{}';
  places integer[] := '{}';
  d bigint[];
  bytes bigint := 0;
  taken integer := 0;
  cur_rank integer := -1;
  lim integer;
  count_now integer;
  hz bigint;
BEGIN
  -- Creates the group, or locks its row: claims of one group take turns, cluster-wide.
  INSERT INTO groups AS g (mbox, name, cursor0, cursor1, cursor2, delivered0, delivered1, delivered2, next_batch,
                           max_deliver, backoff_ms)
  SELECT b.id, p_group, p_from, p_from, p_from, p_from - 1, p_from - 1, p_from - 1, 1, p_max_deliver, p_backoff
  FROM mailboxes b
  WHERE b.address = p_address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
  ON CONFLICT (mbox, name) DO UPDATE SET
    next_batch = g.next_batch + 1,
    max_deliver = coalesce(p_max_deliver, g.max_deliver),
    backoff_ms = coalesce(p_backoff, g.backoff_ms),
    cursor0 = CASE WHEN p_reset THEN excluded.cursor0 ELSE g.cursor0 END,
    cursor1 = CASE WHEN p_reset THEN excluded.cursor1 ELSE g.cursor1 END,
    cursor2 = CASE WHEN p_reset THEN excluded.cursor2 ELSE g.cursor2 END,
    delivered0 = CASE WHEN p_reset THEN excluded.delivered0 ELSE g.delivered0 END,
    delivered1 = CASE WHEN p_reset THEN excluded.delivered1 ELSE g.delivered1 END,
    delivered2 = CASE WHEN p_reset THEN excluded.delivered2 ELSE g.delivered2 END
  RETURNING g.mbox, g.delivered0, g.delivered1, g.delivered2, g.next_batch - 1 AS batch, g.max_deliver,
            g.backoff_ms INTO st;
  IF NOT FOUND THEN RETURN; END IF;
  hz := mq9_horizon(st.mbox);
  SELECT coalesce(st.max_deliver, b.max_deliver, 0) INTO lim FROM mailboxes b WHERE b.id = st.mbox;
  IF p_reset THEN
    DELETE FROM deliveries dl WHERE dl.mbox = st.mbox AND dl.grp = p_group;
  END IF;
  d := ARRAY[st.delivered0, st.delivered1, st.delivered2];
  -- Past the highest id handed out, plus what an expired lease gave back once its backoff is over
  -- and while it has deliveries left.
  FOR r IN
    SELECT * FROM (
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 0 AND m.msg_id > st.delivered0 AND m.msg_id < hz AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 1 AND m.msg_id > st.delivered1 AND m.msg_id < hz AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, false AS again
        FROM messages m
        WHERE m.mbox = st.mbox AND m.priority = 2 AND m.msg_id > st.delivered2 AND m.msg_id < hz AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY m.msg_id LIMIT p_limit)
      UNION ALL
      (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms, true AS again
        FROM deliveries dl JOIN messages m ON m.mbox = dl.mbox AND m.msg_id = dl.msg_id
        WHERE dl.mbox = st.mbox AND dl.grp = p_group AND NOT dl.acked AND dl.lease_until_ms <= p_now
          AND NOT dl.dead AND (lim = 0 OR dl.delivery_count < lim)
          AND coalesce(dl.retry_at_ms, dl.lease_until_ms + mq9_backoff(st.backoff_ms, dl.delivery_count)) <= p_now
          AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
        ORDER BY dl.priority, dl.msg_id LIMIT p_limit)
    ) c ORDER BY c.priority, c.msg_id
  LOOP
    -- The byte budget as the SQLite store applies it: at least one message, and a class is not
    -- started once the budget is spent.
    EXIT WHEN taken >= p_limit;
    IF r.priority <> cur_rank THEN
      EXIT WHEN bytes > 0 AND bytes >= p_max_bytes;
      cur_rank := r.priority;
    END IF;
    EXIT WHEN bytes > 0 AND bytes + octet_length(r.payload) > p_max_bytes;
    IF r.again THEN
      -- The ACK of that lease may have deleted its row since this loop's snapshot.
      UPDATE deliveries dl SET batch = st.batch, pos = taken + 1, lease_until_ms = p_lease_until,
        delivery_count = dl.delivery_count + 1, retry_at_ms = NULL, member = p_member
      WHERE dl.mbox = st.mbox AND dl.msg_id = r.msg_id AND dl.grp = p_group AND NOT dl.acked
        AND dl.lease_until_ms <= p_now AND NOT dl.dead
      RETURNING dl.delivery_count INTO count_now;
      CONTINUE WHEN NOT FOUND;
    ELSE
      ids := ids || r.msg_id;
      ranks := ranks || r.priority;
      places := places || (taken + 1);
      d[r.priority + 1] := greatest(d[r.priority + 1], r.msg_id);
      count_now := 1;
    END IF;
    taken := taken + 1;
    bytes := bytes + octet_length(r.payload);
    msg_id := r.msg_id; priority := r.priority; msg_key := r.msg_key; tags := r.tags; header := r.header;
    payload := r.payload; created_ms := r.created_ms; expires_ms := r.expires_ms; delivery_count := count_now;
    RETURN NEXT;
  END LOOP;
  IF cardinality(ids) = 0 THEN RETURN; END IF;
  INSERT INTO deliveries AS dl (mbox, grp, msg_id, priority, batch, pos, lease_until_ms, acked, member)
  SELECT st.mbox, p_group, t.id, t.rank, st.batch, t.pos, p_lease_until, false, p_member
  FROM unnest(ids, ranks, places) AS t(id, rank, pos)
  ON CONFLICT (mbox, msg_id, grp) DO UPDATE
    SET batch = excluded.batch, pos = excluded.pos, lease_until_ms = excluded.lease_until_ms, member = excluded.member;
  UPDATE groups g SET delivered0 = d[1], delivered1 = d[2], delivered2 = d[3]
  WHERE g.mbox = st.mbox AND g.name = p_group;
END
$fn$;

${CLAIM_HEAD}
    -- Per class, the next messages past its highest id handed out.
    SELECT picked.* FROM (VALUES (0::smallint, st.delivered0), (1::smallint, st.delivered1), (2::smallint, st.delivered2))
      AS k(rank, past),
    LATERAL (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
             FROM messages m
             WHERE m.mbox = box.id AND m.priority = k.rank AND m.msg_id > k.past AND m.msg_id < hz
               AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
             ORDER BY m.msg_id LIMIT p_limit) picked),
${CLAIM_TAIL}

`,
  // A claim reads each priority class with the class a constant, not a value joined from a list:
  // with the messages' statistics gathered (autovacuum's ANALYZE, mid-drain), a plan that took the
  // class from a list costed every class as the common one and scanned the mailbox's primary key
  // from the class's last delivered id, reading every message of the other classes; with no
  // critical or urgent messages, each claim read the whole mailbox twice.
  `
${CLAIM_HEAD}
    -- Per class, the next messages past its highest id handed out; each class its own query with
    -- its priority a constant (see the migration's comment).
    (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
     FROM messages m
     WHERE m.mbox = box.id AND m.priority = 0 AND m.msg_id > st.delivered0 AND m.msg_id < hz
       AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
     ORDER BY m.msg_id LIMIT p_limit)
    UNION ALL
    (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
     FROM messages m
     WHERE m.mbox = box.id AND m.priority = 1 AND m.msg_id > st.delivered1 AND m.msg_id < hz
       AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
     ORDER BY m.msg_id LIMIT p_limit)
    UNION ALL
    (SELECT m.msg_id, m.priority, m.msg_key, m.tags, m.header, m.payload, m.created_ms, m.expires_ms
     FROM messages m
     WHERE m.mbox = box.id AND m.priority = 2 AND m.msg_id > st.delivered2 AND m.msg_id < hz
       AND (m.expires_ms IS NULL OR m.expires_ms > p_now)
     ORDER BY m.msg_id LIMIT p_limit)),
${CLAIM_TAIL}
`,
  // A SEND batch of plain messages in one transaction again: its mailboxes' rows stay locked
  // until its commit, so readers see each mailbox's next id move only with the messages below
  // it, and no reservation is needed. The batches of several nodes to one mailbox take turns on
  // its row, each waiting for the other's flush; while one waits, its node's next SENDs queue,
  // so the cluster commits fewer, larger batches. The reservations' table and the readers'
  // horizon stay for batches in flight while a cluster migrates; nothing writes them now.
  `
CREATE OR REPLACE PROCEDURE mq9_send(p_addresses text[], p_counts integer[], p_now bigint, p_box integer[],
                          p_priorities smallint[], p_tags text[], p_hlen integer[], p_headers bytea,
                          p_plen integer[], p_payloads bytea, p_created bigint[], p_expires bigint[],
                          p_hat integer[], p_pat integer[], INOUT firsts bigint[] DEFAULT NULL)
LANGUAGE plpgsql AS $fn$
DECLARE
  boxes bigint[];
BEGIN
  -- In id order, so two batches never wait on each other in a cycle; a deleted mailbox is skipped.
  PERFORM 1 FROM (SELECT b.id FROM mailboxes b
                  WHERE b.address = ANY (p_addresses) AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
                  ORDER BY b.id FOR NO KEY UPDATE) locked;
  WITH bumped AS (
    UPDATE mailboxes b SET next_id = b.next_id + q.n
    FROM unnest(p_addresses, p_counts) AS q(address, n)
    WHERE b.address = q.address AND (b.expires_ms IS NULL OR b.expires_ms > p_now)
    RETURNING b.address, b.id, b.next_id - q.n AS first)
  SELECT array_agg(bumped.id ORDER BY q.i), array_agg(bumped.first ORDER BY q.i) INTO boxes, firsts
  FROM unnest(p_addresses) WITH ORDINALITY AS q(address, i) LEFT JOIN bumped ON bumped.address = q.address;
  INSERT INTO messages (mbox, msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms)
  SELECT boxes[t.box], firsts[t.box] + row_number() OVER (PARTITION BY t.box ORDER BY t.ord) - 1, t.priority, NULL,
         t.tags::jsonb, CASE WHEN t.hlen < 0 THEN NULL ELSE substring(p_headers FROM t.hat + 1 FOR t.hlen) END,
         substring(p_payloads FROM t.pat + 1 FOR t.plen), t.created, t.expires
  FROM unnest(p_box, p_priorities, p_tags, p_hlen, p_plen, p_created, p_expires, p_hat, p_pat) WITH ORDINALITY
    AS t(box, priority, tags, hlen, plen, created, expires, hat, pat, ord)
  WHERE boxes[t.box] IS NOT NULL;
END
$fn$;
`,
];

export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

/** Holds the schema version; one row. */
export const POSTGRES_VERSION_TABLE = `
CREATE TABLE IF NOT EXISTS mq9_schema_version (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL
)`;
