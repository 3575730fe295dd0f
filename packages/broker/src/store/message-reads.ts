import { PRIORITIES } from "@mq9/protocol";
import type { AppendedRow } from "./appended-rows.js";
import type { MessageBytes, MessageLog } from "./message-log.js";
import {
  EMPTY,
  locatedMessageRowOf,
  locationOf,
  type MessageRow,
  messageRowOf,
} from "./message-row-writer.js";
import { RecentMessages } from "./recent-messages.js";
import { CorruptRecordError } from "./record-checks.js";
import type { MessageStatements } from "./sqlite-statements.js";
import { StorageError } from "./storage-error.js";
import type { StoredMessage } from "./store.js";

/** The priority classes by rank, critical first. */
export const RANKS = [0, 1, 2] as const;

/**
 * Walks the priority classes, critical first, taking each class's rows (FIFO)
 * until `limit` or the payload byte budget is reached (always at least one).
 */
export function takeByPriority(
  limit: number,
  maxBytes: number,
  messagesOf: (rank: number, remaining: number) => StoredMessage[],
): StoredMessage[] {
  const taken: StoredMessage[] = [];
  let bytes = 0;
  for (const rank of RANKS) {
    const remaining = limit - taken.length;
    if (remaining <= 0 || (bytes > 0 && bytes >= maxBytes)) break;
    for (const message of messagesOf(rank, remaining)) {
      if (bytes > 0 && bytes + message.payload.length > maxBytes) return taken;
      bytes += message.payload.length;
      taken.push(message);
    }
  }
  return taken;
}

/** A class's live messages from an id on, as MessageReads.classMessages reads them. */
export type ClassRead = (
  mbox: number,
  rank: number,
  fromId: number,
  nowMs: number,
  fromCreatedMs: number,
  limit: number,
) => StoredMessage[];

/**
 * The read side of the embedded store: turns message rows into stored messages, their bytes
 * taken from the newest messages kept in memory, else from the message log (neighbouring ones
 * in one read), and knows each mailbox's newest id per class, so a consumer that has caught up
 * costs no query.
 */
export class MessageReads {
  private readonly recent: RecentMessages;
  /** Per mailbox, the highest id ever stored in each priority class (at least; deletions do not lower it). */
  private readonly newestIds = new Map<number, number[]>();

  constructor(
    private readonly stmt: MessageStatements,
    /** Where the rows' bytes are (absent for an in-memory store, whose rows hold them). */
    private readonly log: MessageLog | undefined,
    recentMessageBytes: number,
  ) {
    this.recent = new RecentMessages(recentMessageBytes);
  }

  /** Notes messages just stored: the newest id of their class, and their bytes' place in the log. */
  stored(rows: readonly AppendedRow[]): void {
    for (const row of rows) {
      this.raiseNewest(row.mbox, row.priority, row.id);
      if (row.located) this.log?.stored(row.located, row.id);
    }
    this.recent.keep(rows);
  }

  /**
   * Notes a delayed message that became due, stored with `id` in the class `rank` (it is not kept
   * in memory; reads of its class from below it ask the database). Call it before the messages
   * it replaces by key (see deleted).
   */
  promoted(mbox: number, rank: number, id: number): void {
    this.raiseNewest(mbox, rank, id);
    this.recent.notKept(mbox, rank, id);
  }

  private raiseNewest(mbox: number, rank: number, id: number): void {
    const newest = this.newestIdsOf(mbox);
    if (id > newest[rank]) newest[rank] = id;
  }

  /** Notes messages deleted from the database, once the delete is committed. */
  deleted(ids: Iterable<number>): void {
    for (const id of ids) this.recent.delete(id);
  }

  /** Forgets what is known of a mailbox that was dropped. */
  forgetMailbox(mbox: number): void {
    this.newestIds.delete(mbox);
    this.recent.forgetMailbox(mbox);
  }

  /** Notes that every message of a mailbox was deleted (a purge): it is still there, empty. */
  emptied(mbox: number): void {
    this.recent.forgetMailbox(mbox);
  }

  /** A class's live messages from `fromId` in id order, the bytes of recent ones from memory, of the rest from the log. */
  readonly classMessages: ClassRead = (mbox, rank, fromId, nowMs, fromCreatedMs, limit) => {
    // A consumer that has caught up asks for ids past the newest: no query needed.
    if (fromId > this.newestIdsOf(mbox)[rank]) return [];
    // A consumer keeping up finds every message in memory, and which ones there are: no SQL.
    const hot = this.recent.classMessages(mbox, rank, fromId, nowMs, fromCreatedMs, limit);
    if (hot) return hot;
    const rows = this.classRows(mbox, rank, fromId, nowMs, fromCreatedMs, limit);
    const messages: (StoredMessage | undefined)[] = rows.map((row) => this.recent.get(row.msg_id));
    const cold = rows.filter((_, i) => messages[i] === undefined);
    if (cold.length === 0) return messages as StoredMessage[];
    const read = this.messagesOf(cold);
    let next = 0;
    return messages.map((message) => message ?? read[next++]);
  };

  /**
   * Message rows as reads return them, headers and payloads taken from the log where the rows
   * point there (neighbouring ones in one read).
   */
  readonly messagesOf = (rows: readonly MessageRow[]): StoredMessage[] => {
    const located = rows.map(locationOf);
    const bytes = this.log ? this.log.readMany(located) : [];
    return rows.map((row, i) => {
      const read = bytes[i];
      if (read instanceof CorruptRecordError) throw corruptMessage(row.msg_id, read);
      return storedMessage(row, read ?? { header: row.header, payload: row.payload ?? EMPTY });
    });
  };

  /** The rows of a class read: with the log, only where each message's bytes are, when all are there. */
  private classRows(
    mbox: number,
    rank: number,
    fromId: number,
    nowMs: number,
    fromCreatedMs: number,
    limit: number,
  ): MessageRow[] {
    if (this.log) {
      const located = this.stmt.classLocated.all(mbox, rank, fromId, nowMs, fromCreatedMs, limit);
      const rows: MessageRow[] = new Array(located.length);
      let whole = true;
      for (let i = 0; i < located.length && whole; i++) {
        rows[i] = locatedMessageRowOf(located[i], rank);
        // A row holding its bytes itself (a delayed message that became due): read them all whole.
        whole = rows[i].seg !== null;
      }
      if (whole) return rows;
    }
    return this.stmt.classRows.all(mbox, rank, fromId, nowMs, fromCreatedMs, limit).map(messageRowOf);
  }

  private newestIdsOf(mbox: number): number[] {
    let newest = this.newestIds.get(mbox);
    if (!newest) {
      newest = [-1, -1, -1];
      for (const row of this.stmt.newestByClass.all(mbox)) newest[row.priority] = row.id;
      this.newestIds.set(mbox, newest);
    }
    return newest;
  }
}

/** The error a read of a corrupt message answers: which one, and how to get past it. */
function corruptMessage(msgId: number, cause: CorruptRecordError): StorageError {
  return new StorageError(
    `message ${msgId} is corrupt on disk (${cause.message}); it is not served: delete it (MSG.DELETE) to read past it, or restore the data directory from a backup`,
    "STORE_CORRUPT",
    { cause },
  );
}

function storedMessage(row: MessageRow, { header, payload }: MessageBytes): StoredMessage {
  return {
    id: row.msg_id,
    priority: PRIORITIES[row.priority],
    key: row.msg_key ?? undefined,
    tags: row.tags ? (JSON.parse(row.tags) as string[]) : undefined,
    header: header ?? undefined,
    payload,
    createdMs: row.created_ms,
    expiresMs: row.expires_ms ?? undefined,
    // Set by a claim; present from the start so every message keeps one shape.
    deliveryCount: undefined,
  };
}
