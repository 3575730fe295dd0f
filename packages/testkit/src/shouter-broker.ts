// The framework adapters' common ground: a real broker and Shouter, a real A2A agent served by
// `mq9 agent serve` that answers a task with its text in capitals.
import type { Mq9Client } from "@mq9/client";
import { startBroker, type TestBroker } from "./broker.js";
import { type CommandAgent, serveCommandAgent } from "./command-agent.js";

/** A broker (no embedder), a client of it, and Shouter registered and serving. */
export interface ShouterBroker {
  broker: TestBroker;
  client: Mq9Client;
  shouter: CommandAgent;
  /** Stops Shouter, then the broker. */
  close(): Promise<void>;
}

/** Starts a broker with Shouter (`tr a-z A-Z` behind an A2A card) serving on it. */
export async function startShouterBroker(): Promise<ShouterBroker> {
  const broker = await startBroker({ registry: { embedder: "none" } });
  try {
    const client = await broker.client();
    const shouter = await serveCommandAgent(broker.url, {
      name: "Shouter",
      description: "Repeats the task text in capitals.",
      exec: "tr a-z A-Z",
    });
    const close = async () => {
      await shouter.stop();
      await broker.close();
    };
    return { broker, client, shouter, close };
  } catch (err) {
    await broker.close();
    throw err;
  }
}
