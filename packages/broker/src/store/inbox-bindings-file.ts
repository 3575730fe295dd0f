import { readFile, rename, writeFile } from "node:fs/promises";
import type { InboxBinding, InboxBindingsStore } from "./inbox-bindings.js";

/**
 * The SQLite store's reply inboxes bound to users: `inboxes.json` in its data directory
 * (`{ "version": 1, "inboxes": [{ "id", "user" }] }`), replaced whole through a temporary file so
 * that a crash leaves the old set or the new one.
 */
export class InboxBindingsFile implements InboxBindingsStore {
  constructor(private readonly path: string) {}

  async load(): Promise<InboxBinding[]> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    let parsed: { inboxes?: unknown };
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new Error(`${this.path} is not valid JSON`, { cause: err });
    }
    if (!Array.isArray(parsed?.inboxes)) throw new Error(`${this.path} holds no inboxes list`);
    return parsed.inboxes.filter(
      (b): b is InboxBinding => typeof b?.id === "string" && typeof b?.user === "string",
    );
  }

  async save(bindings: readonly InboxBinding[]): Promise<void> {
    const temporary = `${this.path}.tmp`;
    await writeFile(temporary, JSON.stringify({ version: 1, inboxes: bindings }), { mode: 0o600 });
    await rename(temporary, this.path);
  }
}
