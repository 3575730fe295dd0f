import type pg from "pg";

/** The statement every SEND batch of plain messages runs (mq9_send in postgres-schema.ts). */
const SEND_STATEMENT = "mq9-send";
const SEND_TEXT = "CALL mq9_send($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

/** The parts of pg's connection a query submits itself on (pg/lib/connection.js). */
interface WireConnection {
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(query: { name: string; text: string; types: number[] }): void;
  bind(config: { statement: string; values: readonly (string | Buffer | null)[] }): void;
  execute(config: Record<string, never>): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

/**
 * One `CALL mq9_send` as a pg Submittable: the same named prepared statement, on the wire as
 * Bind, Execute and Sync, without what pg's own query does per call that a SEND batch does not
 * need (a copy of its config, each value through prepareValue, a Describe and its row
 * description, a result object): that was a fixed cost per batch, paid once per node per batch.
 * Values must already be text (array literals) or binary (Buffer). Answers the procedure's one
 * out parameter, each mailbox's first id (null where it was missing).
 */
export class SendCall implements pg.Submittable {
  /** pg's client reads the statement's name and text to track what each connection parsed. */
  readonly name = SEND_STATEMENT;
  readonly text = SEND_TEXT;
  /** Set by pg's client (it wraps it with its query timeout). */
  callback: (err: Error | null, firsts?: (number | null)[]) => void;
  private firsts: string | null = null;

  constructor(
    private readonly values: readonly (string | Buffer | null)[],
    callback: (err: Error | null, firsts?: (number | null)[]) => void,
  ) {
    this.callback = callback;
  }

  submit(connection: pg.Connection): void {
    const wire = connection as unknown as WireConnection;
    // One write for the whole exchange, as pg does for its own prepared queries.
    wire.stream.cork?.();
    try {
      if (
        wire.parsedStatements[this.name] === undefined &&
        wire.submittedNamedStatements[this.name] === undefined
      ) {
        wire.parse({ name: this.name, text: this.text, types: [] });
        wire.submittedNamedStatements[this.name] = this.text;
      }
      wire.bind({ statement: this.name, values: this.values });
      wire.execute({});
      wire.sync();
    } finally {
      wire.stream.uncork?.();
    }
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    this.firsts = msg.fields[0];
  }

  handleReadyForQuery(): void {
    this.callback(null, parseIdArray(this.firsts));
  }

  handleError(err: Error): void {
    this.callback(err);
  }

  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
  handleCopyInResponse(connection: pg.Connection): void {
    (connection as unknown as WireConnection).sendCopyFail("mq9_send copies nothing");
  }
}

/** A bigint[] in PostgreSQL's text form (`{1,NULL,7}`, or none) as numbers; ids fit in 2^53. */
export function parseIdArray(text: string | null): (number | null)[] {
  if (text === null || text.length <= 2) return [];
  const ids: (number | null)[] = [];
  for (const part of text.slice(1, -1).split(",")) ids.push(part === "NULL" ? null : Number(part));
  return ids;
}
