import type { Mq9Message } from "@mq9/client";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The payload as text when it is valid UTF-8, else undefined. */
function payloadText(message: Mq9Message): string | undefined {
  try {
    return strictUtf8.decode(message.payload);
  } catch {
    return undefined;
  }
}

/** A message as one JSON object: text payloads as `payload`, binary ones as `payload_base64`. */
export function messageRecord(message: Mq9Message): Record<string, unknown> {
  const record: Record<string, unknown> = {
    msg_id: message.msgId,
    priority: message.priority,
    create_time: message.createTime,
  };
  const text = payloadText(message);
  if (text === undefined) record.payload_base64 = Buffer.from(message.payload).toString("base64");
  else record.payload = text;
  if (message.key !== undefined) record.key = message.key;
  if (message.tags.length > 0) record.tags = message.tags;
  if (Object.keys(message.headers).length > 0) record.headers = message.headers;
  return record;
}

/** Unix seconds as an ISO timestamp without milliseconds (UTC). */
export function isoTime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
}

/** Text for a table cell: one line, at most `max` characters. */
export function cell(value: string, max = 60): string {
  const oneLine = value.replace(/[\r\n\t]+/g, " ");
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

/** A payload for a table: its text, or a note on its size when it is binary. */
export function payloadCell(message: Mq9Message): string {
  const text = payloadText(message);
  return text === undefined ? `<${message.payload.length} bytes, binary>` : cell(text);
}

/** Prints rows under a header with aligned columns. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join("  ")
      .trimEnd();
  process.stdout.write(`${[line(header), ...rows.map(line)].join("\n")}\n`);
}

/** The table of FETCH/QUERY results. */
export function printMessages(messages: Mq9Message[]): void {
  if (messages.length === 0) {
    process.stdout.write("(no messages)\n");
    return;
  }
  printTable(
    ["MSG_ID", "PRIORITY", "CREATED", "KEY", "TAGS", "PAYLOAD"],
    messages.map((m) => [
      String(m.msgId),
      m.priority,
      isoTime(m.createTime),
      m.key ?? "-",
      m.tags.join(",") || "-",
      payloadCell(m),
    ]),
  );
}

/** One JSON document on one line. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * Tells the person at the terminal something that is not the command's output: on stderr, so
 * that stdout stays what a script reads. `who` names the speaker (`mq9`, `mq9 agent`).
 */
export function say(text: string, who = "mq9"): void {
  process.stderr.write(`${who}: ${text}\n`);
}

/** A line on stderr exactly as given (a template problem's `file:line:column: …`). */
export function sayLine(line: string): void {
  process.stderr.write(`${line}\n`);
}

/**
 * A failed command's error, as its output mode asks: one JSON object `{error, code}` with
 * --json, else `mq9: <message>` with the code in parentheses when it tells more.
 */
export function printError(
  message: string,
  code: string,
  json: boolean | undefined,
  showCode: boolean,
): void {
  if (json) sayLine(JSON.stringify({ error: message, code }));
  else say(showCode ? `${message} (${code})` : message);
}
