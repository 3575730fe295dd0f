import type pg from "pg";

/**
 * Runs `use` on a connection checked out of `pool`, and gives it back. The pool listens for
 * socket errors on idle connections only: on a checked-out one an 'error' event with no
 * listener would end the process, so one listens while `use` runs (the query in progress
 * fails with the error too). A connection that failed, or that `use` marks broken, is thrown
 * away instead of given to the next caller.
 */
export async function withCheckedOutClient<T>(
  pool: pg.Pool,
  use: (client: pg.PoolClient, markBroken: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const markBroken = (err: Error) => {
    broken = err;
  };
  client.on("error", markBroken);
  try {
    return await use(client, markBroken);
  } finally {
    client.off("error", markBroken);
    client.release(broken);
  }
}
