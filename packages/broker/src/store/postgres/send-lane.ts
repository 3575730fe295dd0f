import pg from "pg";
import { withCheckedOutClient } from "./checked-out-client.js";

/** After the lane could not connect, batches use the shared pool this long before it tries again. */
const RETRY_AFTER_MS = 5_000;

/**
 * The connection SEND batches run on: one of its own, opened once and kept between batches,
 * instead of one checked out of the shared pool and given back for each (the checkout, its
 * release and the error listener each time were a fixed cost per batch). Outside the shared
 * pool, so holding it never keeps a connection from another statement. A node's batches come
 * one at a time; one that arrives while the lane is busy, or while it cannot connect (no
 * connection left on the server), runs on the shared pool as any statement does. A connection
 * that failed, or that a batch marks broken, is closed, and the next batch opens another.
 */
export class SendLane {
  private readonly own: pg.Pool;
  private client?: pg.PoolClient;
  /** Listens on the kept connection: a pool listens on idle connections only. */
  private onError?: (err: Error) => void;
  private busy = false;
  private closed = false;
  private retryAt = 0;

  constructor(
    private readonly shared: pg.Pool,
    config: pg.ClientConfig,
  ) {
    this.own = new pg.Pool({ ...config, max: 1, keepAlive: true });
    // Only between a release and the close: nothing runs on it then, and the next checkout replaces it.
    this.own.on("error", () => {});
  }

  /** Runs `use` on the lane's connection (or a shared one), as withCheckedOutClient does. */
  async use<T>(use: (client: pg.PoolClient, markBroken: (err: Error) => void) => Promise<T>): Promise<T> {
    if (this.busy || this.closed || (this.client === undefined && Date.now() < this.retryAt))
      return withCheckedOutClient(this.shared, use);
    this.busy = true;
    let client = this.client;
    if (client === undefined) {
      try {
        client = await this.checkOut();
      } catch {
        this.busy = false;
        this.retryAt = Date.now() + RETRY_AFTER_MS;
        return withCheckedOutClient(this.shared, use);
      }
    }
    let broken: Error | undefined;
    try {
      return await use(client, (err) => {
        broken = err;
      });
    } finally {
      this.busy = false;
      if (broken !== undefined) this.drop(client, broken);
      else if (this.closed) this.drop(client);
    }
  }

  /** Closes the lane's connection (once its batch is done); batches after this use the shared pool. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.client !== undefined && !this.busy) this.drop(this.client);
    await this.own.end();
  }

  private async checkOut(): Promise<pg.PoolClient> {
    const client = await this.own.connect();
    // A checked-out connection's socket error would end the process unheard: drop it instead.
    this.onError = (err) => this.drop(client, err);
    client.on("error", this.onError);
    this.client = client;
    return client;
  }

  /** Stops using `client`: back to the lane's pool, or, with `err`, closed. */
  private drop(client: pg.PoolClient, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.onError) client.off("error", this.onError);
    client.release(err);
  }
}
