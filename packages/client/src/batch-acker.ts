interface Waiter {
  index: number;
  resolve(): void;
  reject(err: Error): void;
}

/**
 * ACKs for one FETCH reply. ACK(m) also acknowledges every message delivered
 * before m in the same reply, so only the end of the longest handled prefix may
 * be ACKed: a message whose handler failed (or still runs) holds back those after
 * it. Consecutive completions collapse into one ACK: the ACK goes out at the end of
 * the event-loop turn, so handlers finishing in the same turn share it.
 */
export class BatchAcker {
  private readonly handled: boolean[];
  /** Messages given back (NAKed): they count as done for the prefix, but no ACK may name them. */
  private readonly givenBack: boolean[];
  /** Messages [0, prefix) are handled. */
  private prefix = 0;
  /** Messages [0, acked) are confirmed by the broker. */
  private acked = 0;
  private sending: Promise<void> | undefined;
  private failure: Error | undefined;
  private waiters: Waiter[] = [];
  private flushScheduled = false;

  constructor(
    private readonly msgIds: readonly number[],
    private readonly sendAck: (msgId: number) => Promise<void>,
    private readonly onAcked: (msgIds: readonly number[]) => void = () => {},
    /** Called once when `finished` turns true (everything ACKed, or an ACK failed for good). */
    private readonly onFinished: () => void = () => {},
  ) {
    this.handled = new Array<boolean>(msgIds.length).fill(false);
    this.givenBack = new Array<boolean>(msgIds.length).fill(false);
  }

  /**
   * Marks message `index` given back to the broker (NAKed), which took it out of its batch: it no
   * longer holds back the messages after it, and the ACK that covers them does not name it.
   */
  gaveBack(index: number): void {
    if (index < this.acked || this.failure) return;
    this.givenBack[index] = true;
    this.handledAt(index);
  }

  /** Marks message `index` handled; resolves once an ACK covering it is confirmed. */
  done(index: number): Promise<void> {
    if (index < this.acked) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    const confirmed = new Promise<void>((resolve, reject) => {
      this.waiters.push({ index, resolve, reject });
    });
    this.handledAt(index);
    return confirmed;
  }

  /**
   * Marks message `index` handled, like `done` but for a caller that does not wait for the
   * ACK (the consumer's own autoAck): no promise per message. A failed ACK is reported by
   * `sendAck` itself.
   */
  handledAt(index: number): void {
    if (index < this.acked || this.failure) return;
    this.handled[index] = true;
    while (this.prefix < this.msgIds.length && this.handled[this.prefix]) this.prefix++;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.scheduledFlush);
    }
  }

  private readonly scheduledFlush = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /** True when every message is ACKed or an ACK failed for good. */
  get finished(): boolean {
    return this.acked === this.msgIds.length || this.failure !== undefined;
  }

  /** Resolves when no ACK is in flight or about to be sent any more. */
  async idle(): Promise<void> {
    while (this.sending || this.flushScheduled) {
      if (this.sending) await this.sending;
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Fails the callers still waiting for an ACK that will not come (used on stop). */
  abandon(reason: Error): void {
    for (const waiter of this.waiters) waiter.reject(reason);
    this.waiters = [];
  }

  private flush(): void {
    if (this.sending || this.failure || this.prefix <= this.acked) return;
    const target = this.prefix;
    // The ACK names the last handled message that was not given back; none: nothing to send.
    let named = target - 1;
    while (named >= this.acked && this.givenBack[named]) named--;
    const sent = named < this.acked ? Promise.resolve() : this.sendAck(this.msgIds[named]);
    this.sending = sent.then(
      () => {
        const covered = this.msgIds.slice(this.acked, target);
        this.acked = target;
        this.sending = undefined;
        if (this.waiters.length > 0) {
          this.waiters = this.waiters.filter((waiter) => {
            if (waiter.index >= target) return true;
            waiter.resolve();
            return false;
          });
        }
        this.onAcked(covered);
        if (this.finished) this.onFinished();
        else this.flush();
      },
      (err: Error) => {
        this.sending = undefined;
        this.failure = err;
        this.abandon(err);
        this.onFinished();
      },
    );
  }
}
