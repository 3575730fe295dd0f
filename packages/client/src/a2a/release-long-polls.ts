import type { Mq9Client } from "../client.js";
import { A2AHeaders } from "./binding.js";

/**
 * After a consumer stops, the broker may still hold its last long-poll FETCH and
 * would lease the next message to that dead request until the lease runs out. A
 * no-op message ends such a FETCH at once, so requests sent next go to whoever
 * consumes the mailbox after us. Readers ignore it (header `mq9-a2a-noop`).
 */
export async function releaseLongPolls(client: Mq9Client, mailbox: string): Promise<void> {
  await client
    .send(mailbox, "{}", { headers: { [A2AHeaders.noop]: "true" }, ttlSeconds: 60 })
    .catch(() => {});
}
