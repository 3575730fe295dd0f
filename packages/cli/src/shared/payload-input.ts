import { readFileSync } from "node:fs";
import { UsageError } from "./client-command.js";

/** Reads all of stdin as bytes. */
async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The bytes of a payload given as an argument, with --file, or on stdin (no argument,
 * or "-"). Exactly one source may be used.
 */
export async function readPayload(
  argument: string | undefined,
  file: string | undefined,
): Promise<Uint8Array> {
  if (argument !== undefined && argument !== "-" && file !== undefined) {
    throw new UsageError("give the payload as an argument or with --file, not both");
  }
  if (file !== undefined) return file === "-" ? readStdin() : readFileSync(file);
  if (argument === undefined || argument === "-") {
    if (process.stdin.isTTY) {
      throw new UsageError("no payload: pass it as an argument, with --file, or pipe it to stdin");
    }
    return readStdin();
  }
  return new TextEncoder().encode(argument);
}
