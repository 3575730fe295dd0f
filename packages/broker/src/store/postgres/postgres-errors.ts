import { OUTCOME_UNKNOWN, StorageError } from "../storage-error.js";

/** Network-level failures: the server is not there (or went away mid-request). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
]);

/** SQLSTATE classes and codes that mean the database cannot serve now but may again soon. */
function isUnavailableState(code: string): boolean {
  return (
    code.startsWith("08") || // connection exception
    code === "57P01" || // admin_shutdown
    code === "57P02" || // crash_shutdown
    code === "57P03" || // cannot_connect_now (starting up, recovering)
    code === "25006" // read_only_sql_transaction: a standby after a failover that has not finished
  );
}

function isTimeout(err: Error): boolean {
  return /timeout|timed out/i.test(err.message) || (err as { code?: string }).code === "57014";
}

/** Node's codes for a server certificate that does not verify (unknown CA, wrong name, expired). */
const TLS_UNVERIFIED =
  /^(UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_|ERR_TLS_CERT_ALTNAME_INVALID)/;

/** No server socket at a Unix-socket path: the server is not running there. */
function isMissingSocket(code: string, err: Error): boolean {
  return code === "ENOENT" && /\.s\.PGSQL\./.test(err.message);
}

/** Where the database is, for messages: host:port/database, never the password. */
export function describeDatabase(url: string): string {
  // A host= parameter (a Unix socket's folder) overrides the URL's host, as pg reads it.
  const socket = /[?&]host=([^&]+)/.exec(url)?.[1];
  if (socket) {
    const database = /^postgres(?:ql)?:\/\/[^/]*(\/[^?]*)/.exec(url)?.[1] ?? "";
    return `${decodeURIComponent(socket)}${database}`;
  }
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
  } catch {
    return "the configured database";
  }
}

/**
 * Maps a `pg` error to a StorageError saying what to do. `where` names the database without
 * its password (host:port/db), for the messages. `opening`: the broker is starting, and stops
 * on this error rather than retrying.
 */
export function postgresError(err: unknown, context: string, where: string, opening = false): StorageError {
  if (err instanceof StorageError) return err;
  const error = err instanceof Error ? err : new Error(String(err));
  const code = (error as { code?: string }).code ?? "";
  if (/unsupported startup parameter/i.test(error.message)) {
    // PgBouncer's words (SQLSTATE 08P01): not a database that is down, so not "unavailable".
    return new StorageError(
      `${context}: a connection pooler at ${where} refused mq9's connection (${error.message}): mq9 sets its schema with the startup parameter options=-c search_path=… and holds session-level locks, so point --postgres at PostgreSQL itself, or at a pooler in session mode that passes that parameter on (docs/cluster.md, Sizing)`,
      "STORE_CONFIG",
      { cause: err },
    );
  }
  if (TLS_UNVERIFIED.test(code)) {
    // pg verifies the certificate for sslmode=require too (libpq would not): the usual surprise.
    return new StorageError(
      `${context}: the TLS certificate of PostgreSQL at ${where} could not be verified (${error.message}); the driver checks it for every sslmode but no-verify: give the CA that signed it with sslrootcert=/path/to/ca.pem in --postgres (a managed service publishes its bundle), or sslmode=no-verify to encrypt without checking`,
      "STORE_TLS",
      { cause: err },
    );
  }
  if (code === "53300") {
    // too_many_connections: the server is up, its connection slots (or the role's) are spent.
    return new StorageError(
      `${context}: PostgreSQL at ${where} has no connection left for mq9 (${error.message}); each broker opens up to --postgres-pool connections plus one for SEND batches and one per once-per-cluster lock: lower --postgres-pool, or raise max_connections (or the role's CONNECTION LIMIT)`,
      "STORE_UNAVAILABLE",
      { cause: err },
    );
  }
  if (/does not support SSL/i.test(error.message)) {
    return new StorageError(
      `${context}: PostgreSQL at ${where} does not accept TLS connections (${error.message}); drop sslmode from --postgres, or turn ssl on in the server`,
      "STORE_TLS",
      { cause: err },
    );
  }
  if (
    UNREACHABLE.has(code) ||
    isUnavailableState(code) ||
    isMissingSocket(code, error) ||
    /Connection terminated/i.test(error.message)
  ) {
    const advice = opening
      ? "check that the database is running and reachable, then start the broker again"
      : "the broker retries by itself, check that the database is running and reachable";
    return new StorageError(
      `${context}: PostgreSQL at ${where} is unavailable (${error.message}); ${advice}`,
      "STORE_UNAVAILABLE",
      { cause: err },
    );
  }
  if (isTimeout(error)) {
    return new StorageError(
      `${context}: PostgreSQL at ${where} did not answer in time (${error.message}); it may be overloaded or unreachable`,
      "STORE_UNAVAILABLE",
      { cause: err },
    );
  }
  if (code === "28P01" || code === "28000") {
    return new StorageError(
      `${context}: PostgreSQL at ${where} refused the login (${error.message}); check the user and password in --postgres`,
      "STORE_AUTH",
      { cause: err },
    );
  }
  if (code === "3D000") {
    return new StorageError(
      `${context}: ${error.message} at ${where}; create it (createdb) or fix the database name in --postgres`,
      "STORE_UNAVAILABLE",
      { cause: err },
    );
  }
  if (code === "42501") {
    return new StorageError(
      `${context}: the PostgreSQL user lacks rights at ${where} (${error.message}); grant it CREATE on the database (or own the schema) and ALL on the mq9 tables`,
      "STORE_NO_RIGHTS",
      { cause: err },
    );
  }
  return new StorageError(`${context}: ${error.message}`, "STORAGE_FAILED", { cause: err });
}

/**
 * Whether a statement that failed surely changed nothing: the server answered it with an ERROR,
 * which rolls its transaction back. A lost connection, a FATAL (the server shutting down) or a
 * client-side timeout leave open whether a COMMIT sent before them went through.
 */
export function failedOnServer(err: unknown): boolean {
  const { severity, code } = err as { severity?: string; code?: string };
  return severity === "ERROR" && !isUnavailableState(code ?? "");
}

/** The StorageError of a commit sent to PostgreSQL that got no answer: it may have happened. */
export function outcomeUnknownError(err: unknown, context: string, where: string): StorageError {
  const error = err instanceof Error ? err : new Error(String(err));
  return new StorageError(
    `${context}: PostgreSQL at ${where} did not answer its commit (${error.message})`,
    OUTCOME_UNKNOWN,
    { cause: err },
  );
}

/** Whether a failed transaction may simply be run again (a serialization failure or deadlock). */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "40001" || code === "40P01";
}
