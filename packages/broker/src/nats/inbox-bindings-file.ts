import { readFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import type { Logger } from "../logger.js";
import type { InboxBinding, InboxClaims } from "./inbox-claims.js";

/** How often the bindings are written when they changed. */
const WRITE_INTERVAL_MS = 1_000;

/**
 * Keeps the reply inboxes bound to users in a file, so that they stay bound across a restart of
 * the broker: a client that reconnects finds its inbox still its own, not claimed by another user
 * who connected first. Written at most once a second when something changed, and at close; a
 * crash loses at most the last second's new inboxes.
 */
export class InboxBindingsFile {
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly claims: InboxClaims,
    private readonly logger: Logger,
  ) {}

  /** Binds the inboxes the file holds, then writes changes in the background. */
  start(): void {
    this.claims.restore(this.read());
    this.timer = setInterval(() => this.flush(), WRITE_INTERVAL_MS);
    this.timer.unref();
  }

  private read(): InboxBinding[] {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        this.logger.warn(
          { err, path: this.path },
          "nats: cannot read the reply inboxes bound before the restart",
        );
      }
      return [];
    }
    try {
      const parsed = JSON.parse(text) as { inboxes?: unknown };
      if (!Array.isArray(parsed.inboxes)) throw new Error("no inboxes list");
      return parsed.inboxes.filter(
        (b): b is InboxBinding => typeof b?.id === "string" && typeof b?.user === "string",
      );
    } catch (err) {
      this.logger.warn(
        { err, path: this.path },
        "nats: the file of bound reply inboxes is not valid; ignored",
      );
      return [];
    }
  }

  /** Writes the bindings when they changed since the last write; one write at a time. */
  private flush(): Promise<void> {
    this.claims.sweep();
    const bindings = this.claims.takeChanges();
    if (bindings === undefined) return this.writing;
    this.writing = this.writing.then(() => this.write(bindings));
    return this.writing;
  }

  private async write(bindings: InboxBinding[]): Promise<void> {
    const temporary = `${this.path}.tmp`;
    try {
      await writeFile(temporary, JSON.stringify({ version: 1, inboxes: bindings }), { mode: 0o600 });
      await rename(temporary, this.path);
    } catch (err) {
      this.logger.warn({ err, path: this.path }, "nats: cannot save the bound reply inboxes");
    }
  }

  /** Stops the timer and writes what changed (call once every connection is closed). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
