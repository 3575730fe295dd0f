import {
  DEFAULT_MAILBOX_LIST_LIMIT,
  Errors,
  MAX_MAILBOX_LIST_LIMIT,
  type MailboxAdminOp,
  Mq9Error,
  parseGroupInfoRequest,
  parseGroupReleaseRequest,
  parseGroupResetRequest,
  parseMailboxListRequest,
  parseMailboxPurgeRequest,
  requestValue,
} from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";
import type { MessagingEngine } from "../engine/messaging-engine.js";
import { groupSummary, mailboxSummary } from "./inspection-replies.js";
import type { MailboxOwnership } from "./ownership.js";
import type { ServerInfo } from "./server-info.js";

/** Leases read to count a group's members and redeliveries; GROUP.INFO lists the first SHOWN_LEASES. */
const COUNTED_LEASES = 10_000;
const SHOWN_LEASES = 100;

/** What each operator's request on a mailbox is called in a permission error. */
const DOING: Record<MailboxAdminOp, string> = {
  "mailbox.info": "INFO it",
  "mailbox.purge": "PURGE it",
  "mailbox.remove": "REMOVE it",
  "group.list": "list its groups",
  "group.info": "inspect its groups",
  "group.reset": "RESET its groups",
  "group.release": "release its groups' leases",
};

/**
 * The mq9 extensions for operators (MAILBOX.LIST/INFO/PURGE/REMOVE, GROUP.LIST/INFO/RESET,
 * SERVER.INFO), for Mq9Service. With users configured, a mailbox's operations need the rights
 * of a FETCH of it, LIST shows only the mailboxes the caller may read, and SERVER.INFO is for
 * admins.
 */
export class InspectionRequests {
  constructor(
    private readonly engine: MessagingEngine,
    private readonly ownership: MailboxOwnership | undefined,
    private readonly serverInfo: ServerInfo | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  async list(payload: Uint8Array, caller: Principal | undefined): Promise<Record<string, unknown>> {
    const request = requestValue(parseMailboxListRequest(payload));
    const limit = request.limit ?? DEFAULT_MAILBOX_LIST_LIMIT;
    const ownership = this.ownership;
    if (ownership === undefined || caller?.admin) {
      const found = await this.engine.listMailboxes({ search: request.search, limit });
      return { mailboxes: found.map(mailboxSummary) };
    }
    // The store does not know grants: read the most one LIST may show, keep the caller's.
    const found = await this.engine.listMailboxes({ search: request.search, limit: MAX_MAILBOX_LIST_LIMIT });
    const mine = found.filter((mailbox) => ownership.mayRead(caller, mailbox));
    return { mailboxes: mine.slice(0, limit).map(mailboxSummary) };
  }

  /** A request on one mailbox; its body is checked before anything is looked up or changed. */
  async mailboxOp(
    op: MailboxAdminOp,
    address: string,
    payload: Uint8Array,
    caller: Principal | undefined,
  ): Promise<Record<string, unknown>> {
    const engine = this.engine;
    const allowed = () => this.ownership?.check(caller, address, DOING[op]);
    switch (op) {
      case "mailbox.info": {
        await allowed();
        const { mailbox, groups } = await engine.describeMailbox(address);
        const reports = await Promise.all(
          groups.map((g) => engine.groupLeases(address, g.name, COUNTED_LEASES)),
        );
        const now = this.now();
        return {
          mailbox: mailboxSummary(mailbox),
          groups: groups.map((g, i) => groupSummary(g, now, reports[i])),
        };
      }
      case "mailbox.purge": {
        const { key, tag, priority, older_than_s } = requestValue(parseMailboxPurgeRequest(payload));
        await allowed();
        const filter = { key, tag, priority, olderThanSeconds: older_than_s };
        return { purged: await engine.purgeMailbox(address, filter) };
      }
      case "mailbox.remove":
        await allowed();
        await engine.deleteMailbox(address);
        return {};
      case "group.list": {
        await allowed();
        const groups = await engine.groups(address);
        const reports = await Promise.all(
          groups.map((g) => engine.groupLeases(address, g.name, COUNTED_LEASES)),
        );
        const now = this.now();
        return { groups: groups.map((g, i) => groupSummary(g, now, reports[i])) };
      }
      case "group.info": {
        const { group_name } = requestValue(parseGroupInfoRequest(payload));
        await allowed();
        const group = await engine.group(address, group_name);
        const report = await engine.groupLeases(address, group_name, COUNTED_LEASES);
        const summary = groupSummary(group, this.now(), report, true);
        summary.leases = summary.leases?.slice(0, SHOWN_LEASES);
        return { group: summary };
      }
      case "group.release": {
        const { group_name, member } = requestValue(parseGroupReleaseRequest(payload));
        await allowed();
        return { released: await engine.releaseLeases(address, group_name, member) };
      }
      case "group.reset": {
        const reset = requestValue(parseGroupResetRequest(payload));
        await allowed();
        const deliver =
          reset.from_id !== undefined
            ? "from_id"
            : reset.from_time !== undefined
              ? "from_time"
              : reset.deliver;
        const group = await engine.resetGroup(address, reset.group_name, { ...reset, deliver });
        const report = await engine.groupLeases(address, reset.group_name, COUNTED_LEASES);
        return { group: groupSummary(group, this.now(), report) };
      }
    }
  }

  server(caller: Principal | undefined): Record<string, unknown> {
    if (this.ownership !== undefined && !caller?.admin) {
      throw new Mq9Error("PERMISSION_DENIED", Errors.adminOnly("ask SERVER.INFO"));
    }
    if (this.serverInfo === undefined) {
      throw new Mq9Error("INVALID_REQUEST", "this broker was started without SERVER.INFO sources");
    }
    return this.serverInfo.reply();
  }
}
