import type pg from "pg";
import type { Logger } from "../../logger.js";
import { StorageError } from "../storage-error.js";
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, POSTGRES_VERSION_TABLE } from "./postgres-schema.js";

/**
 * Brings the schema to this build's version. Nodes starting together take turns on a
 * transaction-scoped advisory lock, so each migration runs once; a database written by a newer
 * mq9 is refused rather than misread.
 */
export async function migrate(client: pg.PoolClient, schema: string, logger: Logger): Promise<void> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`mq9:${schema}:migrate`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET LOCAL search_path = ${schema}`);
    await client.query(POSTGRES_VERSION_TABLE);
    const { rows } = await client.query<{ version: number }>("SELECT version FROM mq9_schema_version");
    const version = rows[0]?.version ?? 0;
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new StorageError(
        `the PostgreSQL schema ${schema} was written by a newer mq9 (format ${version}, this one reads up to ${POSTGRES_SCHEMA_VERSION}); upgrade this broker or use another schema`,
        "STORE_FORMAT",
      );
    }
    for (let next = version; next < POSTGRES_SCHEMA_VERSION; next++) {
      await client.query(POSTGRES_MIGRATIONS[next]);
      logger.info(`postgres: schema ${schema} migrated to format ${next + 1}`);
    }
    await client.query(
      `INSERT INTO mq9_schema_version (one, version) VALUES (true, $1)
       ON CONFLICT (one) DO UPDATE SET version = excluded.version`,
      [POSTGRES_SCHEMA_VERSION],
    );
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}
