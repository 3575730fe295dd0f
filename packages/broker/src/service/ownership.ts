import { Errors, Mq9Error } from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";
import type { MessagingEngine } from "../engine/messaging-engine.js";
import { subjectMatches } from "../nats/subject.js";

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

  /** Whether `caller` may advertise this mailbox in a registration (its own, granted, or not created yet). */
  async mayRegister(caller: Principal, address: string): Promise<void> {
    try {
      await this.check(caller, address, "register it");
    } catch (err) {
      if (err instanceof Mq9Error)
        throw new Mq9Error("PERMISSION_DENIED", Errors.registerForeignMailbox(address));
      throw err;
    }
  }
}
