/** A one-shot wait for news on a mailbox. */
export interface Watch {
  /** Resolves at the next notify() of the mailbox (never rejects). */
  readonly fired: Promise<void>;
  cancel(): void;
}

/**
 * Wakes waiting long-polls when a mailbox gets a message. The in-process
 * notifier serves one broker; a cluster passes one that also hears other nodes.
 */
export interface Notifier {
  notify(mailbox: string): void;
  watch(mailbox: string): Watch;
  close(): Promise<void>;
}

/** Notifies waiters in this process only. */
export class LocalNotifier implements Notifier {
  private readonly waiters = new Map<string, Set<() => void>>();

  notify(mailbox: string): void {
    const set = this.waiters.get(mailbox);
    if (!set) return;
    this.waiters.delete(mailbox);
    for (const wake of set) wake();
  }

  watch(mailbox: string): Watch {
    let wake!: () => void;
    const fired = new Promise<void>((resolve) => {
      wake = resolve;
    });
    let set = this.waiters.get(mailbox);
    if (!set) {
      set = new Set();
      this.waiters.set(mailbox, set);
    }
    set.add(wake);
    return {
      fired,
      cancel: () => {
        const current = this.waiters.get(mailbox);
        if (!current) return;
        current.delete(wake);
        if (current.size === 0) this.waiters.delete(mailbox);
      },
    };
  }

  async close(): Promise<void> {
    for (const mailbox of [...this.waiters.keys()]) this.notify(mailbox);
  }
}
