import { Events, type NatsConnection } from "nats";

export type ConnectionEvent = "disconnect" | "reconnect" | "close";

/**
 * Follows a NATS connection's status so that requests can fail at once while it is
 * down and retry loops can wake up the moment it is back.
 */
export class ConnectionWatcher {
  private up = true;
  private closedFlag = false;
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();
  private wake: { promise: Promise<void>; resolve: () => void } = deferred();

  constructor(nc: NatsConnection) {
    void this.follow(nc);
    void nc.closed().then(() => this.emit("close"));
  }

  /** True while the socket is up and the connection is not closed. */
  get connected(): boolean {
    return this.up && !this.closedFlag;
  }

  /** True once the connection is closed for good. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** Calls `listener` on every disconnect, reconnect and the final close; returns an unsubscribe. */
  on(listener: (event: ConnectionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves at the next reconnect or close, whichever comes first. */
  changed(): Promise<void> {
    return this.wake.promise;
  }

  private async follow(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect) this.emit("disconnect");
      else if (status.type === Events.Reconnect) this.emit("reconnect");
    }
  }

  private emit(event: ConnectionEvent): void {
    if (this.closedFlag) return;
    if (event === "close") this.closedFlag = true;
    this.up = event === "reconnect";
    for (const listener of this.listeners) listener(event);
    if (event !== "disconnect") {
      const wake = this.wake;
      this.wake = deferred();
      wake.resolve();
    }
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
