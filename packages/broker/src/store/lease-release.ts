/**
 * Giving back leases a FETCH claimed for a requester that turned out to be gone (its reply found
 * no subscriber), so the group's other members get the messages at once instead of after the
 * lease. A Store may offer it; without it such leases simply run out.
 */
export interface LeaseRelease {
  /**
   * Ends the leases of `msgIds` in the group that still run until `leaseUntilMs` (the claim that
   * set them) and are not ACKed; a lease taken since by another claim is left alone. Returns how
   * many were given back.
   */
  releaseLeases(
    mailbox: string,
    group: string,
    msgIds: readonly number[],
    leaseUntilMs: number,
  ): Promise<number>;
}

/** Whether a store can give leases back before they run out. */
export function canReleaseLeases(store: object): store is LeaseRelease {
  return typeof (store as Partial<LeaseRelease>).releaseLeases === "function";
}
