import type pg from "pg";

/**
 * The PostgreSQL sessions of one cluster node, found by the `application_name` its connections
 * carry: `mq9 <token> <node id>`, where the token is the random part of the node's instance
 * (`<node id>/<token>`). The token comes first so that PostgreSQL's 63-byte limit can only cut
 * the node id, never what tells two processes apart.
 */
export function postgresApplicationName(instance: string): string {
  return `mq9 ${tokenOf(instance)} ${instance.slice(0, instance.lastIndexOf("/"))}`;
}

/**
 * Ends every session of the node process `instance` on this database (a hung node's: its
 * once-per-cluster locks are then free for another node, and its id reservations are given up).
 * Returns how many were ended. PostgreSQL lets a role end its own sessions, so nodes that share
 * a role need no more rights.
 */
export async function endSessionsOf(pool: pg.Pool, instance: string): Promise<number> {
  const { rows } = await pool.query<{ ended: number }>(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS ended
     FROM pg_stat_activity
     WHERE datname = current_database() AND application_name LIKE $1 AND pid <> pg_backend_pid()`,
    [`mq9 ${tokenOf(instance)} %`],
  );
  return rows[0]?.ended ?? 0;
}

function tokenOf(instance: string): string {
  const token = instance.slice(instance.lastIndexOf("/") + 1);
  // LIKE's wildcards never occur in a token (hex), and a token is never empty.
  if (!/^[0-9a-f]+$/.test(token)) throw new Error(`not a node instance: ${JSON.stringify(instance)}`);
  return token;
}
