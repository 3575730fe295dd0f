import type { GroupResetRequest, MailboxPurgeRequest, Priority } from "@mq9/protocol";

/** Which mailboxes `listMailboxes` returns. */
export interface MailboxListOptions {
  /** Only addresses that contain this text. */
  search?: string;
  /** At most this many (default 200, at most 1000). */
  limit?: number;
}

/** Which messages `purgeMailbox` deletes: those that match every filter given. */
export interface PurgeFilter {
  key?: string;
  tag?: string;
  priority?: Priority;
  /** Only messages stored at least this many seconds ago. */
  olderThanSeconds?: number;
}

/** Where `resetGroup` restarts a group: one of a msg_id, a time, or the earliest or latest message. */
export type GroupResetPosition =
  | { fromId: number }
  | { fromTime: Date | number }
  | { deliver: "earliest" | "latest" };

/** The PURGE body of a filter. */
export function purgeBody(filter: PurgeFilter): MailboxPurgeRequest {
  return {
    key: filter.key,
    tag: filter.tag,
    priority: filter.priority,
    older_than_s: filter.olderThanSeconds,
  };
}

/** The RESET body of a position; `fromTime` as a Date or Unix seconds. */
export function resetBody(group: string, position: GroupResetPosition): GroupResetRequest {
  if ("fromId" in position) return { group_name: group, from_id: position.fromId };
  if ("fromTime" in position) {
    const { fromTime } = position;
    const seconds = fromTime instanceof Date ? Math.floor(fromTime.getTime() / 1000) : fromTime;
    return { group_name: group, from_time: seconds };
  }
  return { group_name: group, deliver: position.deliver };
}
