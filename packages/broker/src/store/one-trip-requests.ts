import type { ClaimOptions, StoredMessage } from "./store.js";

/**
 * A store on a database server whose claim and ACK find the mailbox themselves (a missing or
 * expired one: nothing claimed, nothing ACKed) and whose claim places a new group itself, so a
 * group FETCH or an ACK is one round trip instead of three: the engine asks about the mailbox only
 * when the answer was empty or false, to tell a missing mailbox from an empty one.
 */
export interface OneTripRequests {
  /** As Store.claim, a new (or reset) group starting at the mailbox's next msg_id at the claim. */
  claimFromNext(
    mailbox: string,
    group: string,
    options: Omit<ClaimOptions, "start">,
  ): Promise<StoredMessage[]>;
}

/** Whether a store serves group FETCHes and ACKs in one round trip each. */
export function servesOneTrip(store: object): store is OneTripRequests {
  return typeof (store as Partial<OneTripRequests>).claimFromNext === "function";
}
