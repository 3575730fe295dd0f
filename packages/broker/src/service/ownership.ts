import { Errors, Mq9Error } from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";
import type { MessagingEngine } from "../engine/messaging-engine.js";
import { subjectMatches } from "../nats/subject.js";
import type { MailboxStanding } from "../registry.js";
import type { MailboxRecord } from "../store/store.js";

/**
 * Who may read and manage a mailbox when users are configured: the user that created it, users the
 * configuration grants it to (`mailboxes` patterns), and admins. Anyone may SEND to any mailbox.
 * A mailbox created before users were configured has no owner: only admins manage it.
 */
export class MailboxOwnership {
  constructor(private readonly engine: MessagingEngine) {}

  /** Throws PERMISSION_DENIED unless `caller` may `op` the mailbox; a missing mailbox is left to the engine. */
  async check(caller: Principal | undefined, address: string, op: string): Promise<void> {
    if (caller?.admin) return;
    if (caller?.mailboxGrants.some((pattern) => subjectMatches(pattern, address))) {
      return;
    }
    const mailbox = await this.engine.mailbox(address);
    if (mailbox === undefined) return;
    if (caller !== undefined && mailbox.owner === caller.name) return;
    throw new Mq9Error("PERMISSION_DENIED", Errors.notMailboxOwner(address, op));
  }

  /** Whether `caller` may read and manage `mailbox` (the same rule as check, for a record in hand). */
  mayRead(caller: Principal | undefined, mailbox: Pick<MailboxRecord, "address" | "owner">): boolean {
    if (caller === undefined) return false;
    if (caller.admin || mailbox.owner === caller.name) return true;
    return caller.mailboxGrants.some((pattern) => subjectMatches(pattern, mailbox.address));
  }

  /**
   * What `caller` is to a mailbox it advertises in a registration: its creator, allowed (a grant,
   * or no such mailbox yet), or foreign. The creator wins a registration of its mailbox that
   * another user made before the mailbox existed (or after an earlier one of that name expired).
   */
  async standing(caller: Principal, address: string): Promise<MailboxStanding> {
    const mailbox = await this.engine.mailbox(address);
    if (mailbox !== undefined && mailbox.owner === caller.name) return "creator";
    if (mailbox === undefined || caller.admin) return "allowed";
    return caller.mailboxGrants.some((pattern) => subjectMatches(pattern, address)) ? "allowed" : "foreign";
  }
}
