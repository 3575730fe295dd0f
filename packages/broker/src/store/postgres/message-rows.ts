import { PRIORITIES, priorityRank } from "@mq9/protocol";
import type pg from "pg";
import type { NewMessage, StoredMessage } from "../store.js";

/** The columns every read of messages selects, in this order. */
export const MESSAGE_COLUMNS = "msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms";

export interface MessageRow {
  msg_id: number;
  priority: number;
  msg_key: string | null;
  tags: string[] | null;
  header: Buffer | null;
  payload: Buffer;
  created_ms: number;
  expires_ms: number | null;
}

export function storedMessage(row: MessageRow): StoredMessage {
  return {
    id: row.msg_id,
    priority: PRIORITIES[row.priority],
    key: row.msg_key ?? undefined,
    tags: row.tags ?? undefined,
    header: row.header ?? undefined,
    payload: row.payload,
    createdMs: row.created_ms,
    expiresMs: row.expires_ms ?? undefined,
    deliveryCount: undefined,
  };
}

/**
 * Rows in priority order (critical first, FIFO within each) cut at `limit` and at the payload
 * byte budget, as the SQLite store cuts them: at least one, and a class is not started once
 * the budget is spent.
 */
export function takeWithinBudget(rows: readonly MessageRow[], limit: number, maxBytes: number): MessageRow[] {
  const taken: MessageRow[] = [];
  let bytes = 0;
  let rank = -1;
  for (const row of rows) {
    if (taken.length >= limit) break;
    if (row.priority !== rank) {
      if (bytes > 0 && bytes >= maxBytes) break;
      rank = row.priority;
    }
    if (bytes > 0 && bytes + row.payload.length > maxBytes) break;
    bytes += row.payload.length;
    taken.push(row);
  }
  return taken;
}

/** A message about to be inserted, its id already reserved. */
export interface MessageInsert {
  mbox: number;
  id: number;
  priority: number;
  key: string | null;
  /** JSON text of the tag list. */
  tags: string | null;
  header: Uint8Array | null;
  payload: Uint8Array;
  createdMs: number;
  expiresMs: number | null;
}

/**
 * Inserts messages in one statement, after applying key compaction: a keyed message replaces the
 * mailbox's message with that key (and, within the batch, only the last one of a key is kept);
 * the replaced messages' delivery rows go with them.
 */
export async function insertMessages(client: pg.PoolClient, rows: readonly MessageInsert[]): Promise<void> {
  const lastOfKey = new Map<string, MessageInsert>();
  for (const row of rows) if (row.key !== null) lastOfKey.set(`${row.mbox}\u0000${row.key}`, row);
  const kept =
    lastOfKey.size === 0
      ? rows
      : rows.filter((row) => row.key === null || lastOfKey.get(`${row.mbox}\u0000${row.key}`) === row);
  if (lastOfKey.size > 0) {
    const keyed = [...lastOfKey.values()];
    await client.query({
      name: "mq9-compact-keys",
      text: `WITH gone AS (
               DELETE FROM messages m USING unnest($1::bigint[], $2::text[]) AS k(mbox, msg_key)
               WHERE m.mbox = k.mbox AND m.msg_key = k.msg_key RETURNING m.mbox, m.msg_id)
             DELETE FROM deliveries d USING gone WHERE d.mbox = gone.mbox AND d.msg_id = gone.msg_id`,
      values: [keyed.map((r) => r.mbox), keyed.map((r) => r.key)],
    });
  }
  if (kept.length === 1) {
    const r = kept[0];
    await client.query({
      name: "mq9-insert-message",
      text: `INSERT INTO messages (mbox, msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms)
             VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9)`,
      values: [r.mbox, r.id, r.priority, r.key, r.tags, r.header, r.payload, r.createdMs, r.expiresMs],
    });
    return;
  }
  await client.query({
    name: "mq9-insert-messages",
    text: `INSERT INTO messages (mbox, msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms)
           SELECT mbox, msg_id, priority, msg_key, tags::jsonb, header, payload, created_ms, expires_ms
           FROM unnest($1::bigint[], $2::bigint[], $3::smallint[], $4::text[], $5::text[], $6::bytea[],
                       $7::bytea[], $8::bigint[], $9::bigint[])
             AS t(mbox, msg_id, priority, msg_key, tags, header, payload, created_ms, expires_ms)`,
    values: [
      kept.map((r) => r.mbox),
      kept.map((r) => r.id),
      kept.map((r) => r.priority),
      kept.map((r) => r.key),
      kept.map((r) => r.tags),
      kept.map((r) => r.header),
      kept.map((r) => r.payload),
      kept.map((r) => r.createdMs),
      kept.map((r) => r.expiresMs),
    ],
  });
}

/**
 * Reserves `counts.get(mbox)` ids in each mailbox, locking their rows until the transaction ends
 * (in id order, so two transactions never wait on each other in a cycle). Returns each
 * mailbox's first reserved id; a mailbox missing from the result no longer exists.
 */
export async function reserveIds(
  client: pg.PoolClient,
  counts: ReadonlyMap<number, number>,
): Promise<Map<number, number>> {
  const ids = [...counts.keys()].sort((a, b) => a - b);
  const { rows } = await client.query<{ id: number; first: number }>({
    name: "mq9-reserve-ids",
    text: `WITH locked AS (SELECT id FROM mailboxes WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)
           UPDATE mailboxes m SET next_id = m.next_id + r.n
           FROM unnest($1::bigint[], $2::bigint[]) AS r(id, n), locked
           WHERE m.id = r.id AND locked.id = r.id
           RETURNING m.id, m.next_id - r.n AS first`,
    values: [ids, ids.map((id) => counts.get(id) ?? 0)],
  });
  return new Map(rows.map((row) => [row.id, row.first]));
}

/**
 * The parameters of mq9_send (postgres-schema.ts) for a batch of plain messages: the mailboxes
 * and how many ids each takes, then per-row arrays (each row's mailbox as a 1-based index into
 * them), with the payloads and headers each concatenated into one buffer that travels in binary,
 * with each row's offset and length (-1 for no header). The statement's text does not depend on
 * the batch's size, so it is prepared once per connection. Each value as it goes on the wire
 * (send-call.ts): text, or a Buffer in binary. Also the mailboxes, in that order.
 */
export function sendBatchValues(
  batch: readonly NewMessage[],
  nowMs: number,
): { values: (string | Buffer)[]; addresses: string[] } {
  const n = batch.length;
  const index = new Map<string, number>();
  const counts: number[] = [];
  const boxes = new Array<number>(n);
  const priorities = new Array<number>(n);
  const tags = new Array<string | null>(n);
  const headerAt = new Array<number>(n);
  const headerLen = new Array<number>(n);
  const payloadAt = new Array<number>(n);
  const payloadLen = new Array<number>(n);
  const created = new Array<number>(n);
  const expires = new Array<number | null>(n);
  const headers: Uint8Array[] = [];
  const payloads: Uint8Array[] = [];
  let headerBytes = 0;
  let payloadBytes = 0;
  for (let i = 0; i < n; i++) {
    const m = batch[i];
    let box = index.get(m.mailbox);
    if (box === undefined) {
      box = index.size + 1;
      index.set(m.mailbox, box);
      counts.push(0);
    }
    counts[box - 1]++;
    boxes[i] = box;
    priorities[i] = priorityRank[m.priority];
    tags[i] = m.tags ? JSON.stringify(m.tags) : null;
    headerAt[i] = headerBytes;
    headerLen[i] = m.header ? m.header.length : -1;
    if (m.header) {
      headers.push(m.header);
      headerBytes += m.header.length;
    }
    payloadAt[i] = payloadBytes;
    payloadLen[i] = m.payload.length;
    payloads.push(m.payload);
    payloadBytes += m.payload.length;
    created[i] = m.sentMs;
    expires[i] = m.expiresMs ?? null;
  }
  const addresses = [...index.keys()];
  return {
    addresses,
    values: [
      textArrayLiteral(addresses),
      numberArrayLiteral(counts),
      String(nowMs),
      numberArrayLiteral(boxes),
      numberArrayLiteral(priorities),
      textArrayLiteral(tags),
      numberArrayLiteral(headerLen),
      Buffer.concat(headers, headerBytes),
      numberArrayLiteral(payloadLen),
      Buffer.concat(payloads, payloadBytes),
      numberArrayLiteral(created),
      numberArrayLiteral(expires),
      numberArrayLiteral(headerAt),
      numberArrayLiteral(payloadAt),
    ],
  };
}

/**
 * A PostgreSQL text[] literal: every element quoted (backslash and double quote escaped), NULL
 * for none; what pg's driver writes for an array of strings.
 */
export function textArrayLiteral(values: readonly (string | null | undefined)[]): string {
  let literal = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ",";
    if (value === null || value === undefined) literal += "NULL";
    else if (value.includes("\\") || value.includes('"'))
      literal += `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
    else literal += `"${value}"`;
  }
  return `${literal}}`;
}

/**
 * A PostgreSQL array literal of numbers, as the pg driver would write it (each number's
 * toString, NULL for none), without the driver's per-element quoting and escaping: numbers
 * need none, and that escaping was a measurable part of each batch's cost.
 */
export function numberArrayLiteral(values: readonly (number | null | undefined)[]): string {
  let literal = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ",";
    literal += value === null || value === undefined ? "NULL" : String(value);
  }
  return `${literal}}`;
}
