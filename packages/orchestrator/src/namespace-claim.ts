import { randomUUID } from "node:crypto";
import type { BusNames } from "@mq9/agent/internal";
import type { Mq9Client } from "@mq9/client";
import { OrchestratorError } from "./errors.js";

/** What a running orchestrator writes under its namespace's claim. */
interface Beat {
  instance: string;
  at: number;
  /** Written by a clean close: the namespace is free at once. */
  closed?: boolean;
}

const KEY = "owner";

export interface NamespaceClaimOptions {
  /** How often the holder says it is alive (default 1 000 ms). */
  beatMs?: number;
}

/**
 * One orchestrator per namespace: two would take each other's replies from the shared inbox
 * and each lose some tasks. The holder writes a beat every `beatMs` to `<namespace>.owner`
 * (a compaction key, so one message); a newcomer that finds a recent beat waits a few beats
 * and refuses to start if it moved. A holder that died stops beating, so a restart after a
 * crash waits those few beats once, and a clean close frees the namespace at once.
 */
export class NamespaceClaim {
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;

  private constructor(
    private readonly client: Mq9Client,
    private readonly mailbox: string,
    private readonly instance: string,
    private readonly beatMs: number,
  ) {}

  /** Takes the namespace, or throws NAMESPACE_IN_USE while another orchestrator holds it. */
  static async take(
    client: Mq9Client,
    names: BusNames,
    options: NamespaceClaimOptions = {},
  ): Promise<NamespaceClaim> {
    const beatMs = options.beatMs ?? 1_000;
    const mailbox = `${names.namespace}.owner`;
    await client.ensureMailbox({ name: mailbox });
    const claim = new NamespaceClaim(client, mailbox, randomUUID(), beatMs);
    const seen = await claim.read();
    if (seen && !seen.closed && Date.now() - seen.at < 3 * beatMs) {
      // Maybe alive, maybe just killed: a live holder beats again within this wait.
      await new Promise((resolve) => setTimeout(resolve, 2.5 * beatMs));
      const again = await claim.read();
      if (again && !again.closed && again.at !== seen.at) {
        throw new OrchestratorError(
          "NAMESPACE_IN_USE",
          `another orchestrator runs on namespace '${names.namespace}' (mq9 serve starts one on 'orch' by default): give this one a namespace of its own, or start mq9 serve with --orchestrator off`,
        );
      }
    }
    await claim.write(false);
    claim.timer = setInterval(() => {
      claim.beating ??= claim
        .write(false)
        .catch(() => {})
        .finally(() => {
          claim.beating = undefined;
        });
    }, beatMs);
    claim.timer.unref?.();
    return claim;
  }

  /** Stops beating and frees the namespace for the next orchestrator. */
  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
    await this.write(true).catch(() => {});
  }

  private async read(): Promise<Beat | undefined> {
    const [latest] = await this.client.query(this.mailbox, { key: KEY });
    return latest?.json<Beat>();
  }

  private async write(closed: boolean): Promise<void> {
    const beat: Beat = { instance: this.instance, at: Date.now(), ...(closed ? { closed } : {}) };
    // A beat outlives a dead holder only briefly: the mailbox stays small.
    await this.client.send(this.mailbox, JSON.stringify(beat), { key: KEY, ttlSeconds: 60 });
  }
}
