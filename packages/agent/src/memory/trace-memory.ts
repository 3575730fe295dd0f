import { type Mq9Client, Mq9Error } from "@mq9/client";
import { BusNames, memoryKey } from "../bus/names.js";

/** Default lifetime of a trace's memory: a day. */
export const DEFAULT_MEMORY_TTL_S = 86_400;

const KEY = /^[A-Za-z0-9_.:-]{1,200}$/;

function checkKey(key: string): void {
  if (!KEY.test(key)) {
    throw new Mq9Error(
      "INVALID_REQUEST",
      `memory key '${key}' is not valid: use 1-200 letters, digits, '_', '.', ':' or '-'`,
      { retryable: false },
    );
  }
}

/**
 * The shared memory of one trace: a mailbox per trace whose messages carry the
 * entry's key as their compaction key, so the mailbox holds the latest value of
 * each key and expires with the trace. Needs nothing but an mq9 broker.
 */
export class TraceMemory {
  readonly mailbox: string;
  private created?: Promise<void>;

  constructor(
    private readonly client: Mq9Client,
    readonly traceId: string,
    options: { names?: BusNames; ttlSeconds?: number } = {},
  ) {
    this.mailbox = (options.names ?? new BusNames()).memory(traceId);
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_MEMORY_TTL_S;
  }

  private readonly ttlSeconds: number;

  /** The latest value stored under `key`, or undefined. */
  async get<T = unknown>(key: string): Promise<T | undefined> {
    checkKey(key);
    try {
      const [latest] = await this.client.query(this.mailbox, { key: memoryKey(key) });
      return latest === undefined ? undefined : (latest.json<{ value: T }>().value as T);
    } catch (err) {
      if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return undefined;
      throw err;
    }
  }

  /** Stores `value` (any JSON) under `key`, replacing what was there. */
  async set(key: string, value: unknown): Promise<void> {
    checkKey(key);
    await this.ensureMailbox();
    const body = JSON.stringify({ key, value, at: Date.now() });
    try {
      await this.client.send(this.mailbox, body, { key: memoryKey(key) });
    } catch (err) {
      // Someone else's view of "created" may be stale (the mailbox expired): create and retry once.
      if (!(err instanceof Mq9Error) || err.code !== "MAILBOX_NOT_FOUND") throw err;
      this.created = undefined;
      await this.ensureMailbox();
      await this.client.send(this.mailbox, body, { key: memoryKey(key) });
    }
  }

  /** Every entry of the trace's memory (the latest value of each key). */
  async entries(): Promise<Record<string, unknown>> {
    try {
      const messages = await this.client.query(this.mailbox, { limit: 100 });
      const out: Record<string, unknown> = {};
      for (const m of messages) {
        const { key, value } = m.json<{ key: string; value: unknown }>();
        out[key] = value;
      }
      return out;
    } catch (err) {
      if (err instanceof Mq9Error && err.code === "MAILBOX_NOT_FOUND") return {};
      throw err;
    }
  }

  /** Creates the mailbox (with the memory's TTL) unless it exists. */
  ensureMailbox(): Promise<void> {
    this.created ??= this.client.ensureMailbox({ name: this.mailbox, ttlSeconds: this.ttlSeconds }).then(
      () => undefined,
      (err: unknown) => {
        this.created = undefined;
        throw err;
      },
    );
    return this.created;
  }
}
