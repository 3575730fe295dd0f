import type { Mq9Client } from "@mq9/client";
import { A2AClient } from "@mq9/client/a2a";
import type { ToolContext } from "./tools.js";

/** Shares one connection (and one A2A reply mailbox) among tool calls; connects on first use, again after a failure. */
export class SharedToolContext {
  private pending: Promise<ToolContext> | undefined;

  constructor(private readonly open: () => Promise<Mq9Client>) {}

  get(): Promise<ToolContext> {
    this.pending ??= this.open().then(
      (client) => ({ client, a2a: new A2AClient(client) }),
      (err) => {
        this.pending = undefined;
        throw err;
      },
    );
    return this.pending;
  }

  async close(): Promise<void> {
    const context = await this.pending?.catch(() => undefined);
    this.pending = undefined;
    if (!context) return;
    await context.a2a.close();
    await context.client.close();
  }
}
