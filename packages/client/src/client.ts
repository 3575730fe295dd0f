import {
  type AgentDiscoverReply,
  type AgentDiscoverRequest,
  type AgentEntry,
  type AgentRegistration,
  type AgentReportRequest,
  type AgentUnregisterRequest,
  Defaults,
  type FetchRequest,
  type GroupInfoReply,
  type GroupListReply,
  type GroupReleaseReply,
  type GroupSummary,
  type MailboxInfoReply,
  type MailboxListReply,
  type MailboxPurgeReply,
  type MailboxSummary,
  type McpServerRegistration,
  type MessageItem,
  Mq9Error,
  type Mq9Reply,
  type ServerInfoReply,
  Subjects,
} from "@mq9/protocol";
import type { NatsConnection } from "nats";
import { pause, retryDelay } from "./backoff.js";
import { ConnectionWatcher } from "./connection-watcher.js";
import {
  type ConsumeOptions,
  Consumer,
  type ConsumerSource,
  type FetchCall,
  type MessageHandler,
} from "./consumer.js";
import { Heartbeat, type HeartbeatOptions } from "./heartbeat.js";
import {
  type GroupResetPosition,
  type MailboxListOptions,
  type PurgeFilter,
  purgeBody,
  resetBody,
} from "./inspection-bodies.js";
import { type ClientLogger, stderrLogger } from "./logger.js";
import { Mq9Message } from "./message.js";
import { targetAddress } from "./mq9-uri.js";
import { encodePayload, type Payload } from "./payload.js";
import { readReply } from "./reply.js";
import {
  type CreateMailboxOptions,
  createBody,
  type FetchOptions,
  fetchBody,
  type NakOptions,
  nakBody,
  type QueryOptions,
  queryBody,
} from "./request-bodies.js";
import { RequestMux } from "./request-mux.js";
import {
  type EncodedHeaders,
  encodedHeaders,
  type SendOptions,
  type SendRetryOptions,
  sendHeaders,
  sendRetryOf,
} from "./send-options.js";
import {
  endSpan,
  fetched as fetchedSpan,
  MessagingAttributes,
  type StartedSpan,
  startFetchSpan,
  startSendSpan,
} from "./tracing.js";

/** Options of an Mq9Client built on a NATS connection you opened yourself. */
export interface Mq9ClientOptions {
  /** How long a request waits for its reply (default 5 000; a FETCH adds its long-poll). */
  requestTimeoutMs?: number;
  /**
   * Where consumers, heartbeats and A2A agents without an `onError` report their failures
   * (default `stderrLogger`, one line each; `quietLogger` says nothing).
   */
  logger?: ClientLogger;
}

const json = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The mq9 client: mailboxes, messages, consumers and the agent registry over one
 * NATS connection. It speaks only the public protocol, so any mq9 broker will do.
 * Get one with `connect()`.
 */
export class Mq9Client {
  /** How long a request waits for its reply. */
  readonly requestTimeoutMs: number;
  /** Where background failures without an `onError` go. */
  readonly logger: ClientLogger;
  private readonly watcher: ConnectionWatcher;
  private readonly mux: RequestMux;
  private readonly consumers = new Set<Consumer>();
  private readonly heartbeats = new Set<Heartbeat>();
  private closing: Promise<void> | undefined;
  private readonly source: ConsumerSource;

  /** Wraps an open NATS connection; `close()` closes it. */
  constructor(
    /** The underlying NATS connection, for plain pub/sub next to mq9. */
    readonly nats: NatsConnection,
    options: Mq9ClientOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
    this.logger = options.logger ?? stderrLogger;
    this.watcher = new ConnectionWatcher(nats);
    this.mux = new RequestMux(nats, this.watcher);
    this.source = {
      connection: this.watcher,
      fetchItems: (mailAddress, body, call) => this.fetchItems(mailAddress, body, call),
      ack: (mailAddress, group, msgId) => this.ack(mailAddress, group, msgId),
      nak: (mailAddress, group, msgId, options) => this.nak(mailAddress, group, msgId, options),
      logger: this.logger,
    };
  }

  /** True while the connection is up (false while it reconnects and after close). */
  get isConnected(): boolean {
    return this.watcher.connected;
  }

  /** Creates a mailbox and returns its mail address (the given name, or one the broker generated). */
  async createMailbox(options: CreateMailboxOptions = {}): Promise<string> {
    return this.call(Subjects.mailboxCreate, json(createBody(options)), readReply.create);
  }

  /**
   * Creates the named mailbox unless it exists: resolves true when it was created, false when it
   * was there already (its TTL and description then stay as they were).
   */
  async ensureMailbox(options: CreateMailboxOptions & { name: string }): Promise<boolean> {
    try {
      await this.createMailbox(options);
      return true;
    } catch (err) {
      if (err instanceof Mq9Error && err.code === "MAILBOX_EXISTS") return false;
      throw err;
    }
  }

  /**
   * Sends a message to a mailbox (a mail address or an `mq9://host/mail_address` URI) and
   * resolves with its msg_id once the broker has stored it; -1 when it is delayed.
   */
  send(target: string, payload: Payload, options?: SendOptions): Promise<number> {
    const retried = sendRetryOf(options);
    if (retried !== undefined) {
      return this.sendRetried(target, payload, { ...options, idempotencyKey: retried.key }, retried.retry);
    }
    // Not async: SEND is the hot path, and this way it costs one promise, the request's own.
    let subject: string;
    let body: Uint8Array;
    let headers: EncodedHeaders | undefined;
    let traced: StartedSpan | undefined;
    try {
      const address = targetAddress(target);
      subject = Subjects.send(address);
      body = encodePayload(payload);
      traced = startSendSpan(address, body.length);
      // Headers the caller gave win over the span's, a traceparent of their own included.
      headers = sendHeaders(
        traced ? { ...options, headers: { ...traced.headers, ...options?.headers } } : options,
      );
    } catch (err) {
      if (traced) endSpan(traced.span, err);
      return Promise.reject(err);
    }
    const sent = this.mux.request(
      subject,
      body,
      { timeoutMs: this.requestTimeoutMs, headers, atOnce: true },
      readReply.send,
    );
    if (traced === undefined) return sent;
    const { span } = traced;
    return sent.then(
      (msgId) => {
        if (msgId >= 0) span.setAttribute(MessagingAttributes.messageId, String(msgId));
        endSpan(span);
        return msgId;
      },
      (err: unknown) => {
        endSpan(span, err);
        throw err;
      },
    );
  }

  /**
   * A send with an idempotency key, tried again while it fails for a reason that may pass (its
   * outcome unknown, a timeout, a lost connection, the broker's store down): the key makes each
   * retry store nothing when an earlier attempt was stored after all.
   */
  private async sendRetried(
    target: string,
    payload: Payload,
    options: SendOptions,
    retry: Required<SendRetryOptions>,
  ): Promise<number> {
    const once = { ...options, retry: false };
    const until = performance.now() + retry.withinMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.send(target, payload, once);
      } catch (err) {
        const again =
          err instanceof Mq9Error &&
          err.retryable &&
          attempt + 1 < retry.attempts &&
          this.closing === undefined;
        if (!again) throw err;
        const delay = retryDelay(attempt, retry);
        if (performance.now() + delay >= until) throw err;
        await pause(delay, { wake: this.watcher.connected ? undefined : this.watcher.changed() });
      }
    }
  }

  /** Fetches the next messages: critical first, then urgent, then normal, FIFO within each. */
  async fetch(mailbox: string, options: FetchOptions = {}): Promise<Mq9Message[]> {
    const maxWaitMs = options.maxWaitMs ?? Defaults.fetchMaxWaitMs;
    const address = targetAddress(mailbox);
    const body = fetchBody(options);
    const traced = startFetchSpan(address, body.group_name ?? undefined);
    try {
      const items = await this.fetchItems(address, body, { maxWaitMs, trace: traced?.headers });
      const messages = items.map((item) => new Mq9Message(item));
      if (traced) {
        fetchedSpan(traced.span, messages);
        endSpan(traced.span);
      }
      return messages;
    } catch (err) {
      if (traced) endSpan(traced.span, err);
      throw err;
    }
  }

  /** Acknowledges `msgId` for a group, and every message delivered before it in the same FETCH reply. */
  async ack(mailbox: string, group: string, msgId: number): Promise<void> {
    const address = targetAddress(mailbox);
    await this.call<Mq9Reply>(
      Subjects.ack(address),
      json({ group_name: group, mail_address: address, msg_id: msgId }),
      readReply.envelope,
    );
  }

  /**
   * Gives a message leased to the group back without waiting for its lease (an mq9 extension):
   * delivered again after `delayMs` (default: the group's backoff), or, `terminal`, moved to the
   * mailbox's dead-letter mailbox. Resolves with whether it went to dead letters.
   */
  async nak(
    mailbox: string,
    group: string,
    msgId: number,
    options: NakOptions = {},
  ): Promise<{ deadLetter: boolean }> {
    const reply = await this.call<Mq9Reply & { dead_letter?: boolean }>(
      Subjects.nak(targetAddress(mailbox)),
      json(nakBody(group, msgId, options)),
      readReply.envelope,
    );
    return { deadLetter: reply.dead_letter === true };
  }

  /**
   * Moves dead letters back to the mailboxes they came from (an mq9 extension): one (`msgId`) or
   * all of `deadLetterMailbox`. Resolves with how many went back.
   */
  async retryDeadLetters(deadLetterMailbox: string, msgId?: number): Promise<number> {
    const reply = await this.call<Mq9Reply & { retried?: number }>(
      Subjects.retry(targetAddress(deadLetterMailbox)),
      json(msgId === undefined ? {} : { msg_id: msgId }),
      readReply.envelope,
    );
    return reply.retried ?? 0;
  }

  /** Reads messages without consuming them (by key, tags or time); oldest first. */
  async query(mailbox: string, options: QueryOptions = {}): Promise<Mq9Message[]> {
    const subject = Subjects.query(targetAddress(mailbox));
    const items = await this.call(subject, json(queryBody(options)), readReply.messages);
    return items.map((item) => new Mq9Message(item));
  }

  /** Deletes one message; resolves with the broker's `deleted` flag. */
  async delete(mailbox: string, msgId: number): Promise<boolean> {
    if (!Number.isSafeInteger(msgId) || msgId < 0) {
      throw new Mq9Error("INVALID_REQUEST", `msg_id must be a non-negative integer, got ${msgId}`, {
        retryable: false,
      });
    }
    return this.call(Subjects.delete(targetAddress(mailbox), msgId), json({}), readReply.delete);
  }

  /** Live mailboxes (all, or those whose address contains `search`), by address: depth, bytes, groups. */
  async listMailboxes(options: MailboxListOptions = {}): Promise<MailboxSummary[]> {
    const body = json({ search: options.search, limit: options.limit });
    return (await this.call<MailboxListReply>(Subjects.mailboxList, body, readReply.envelope)).mailboxes;
  }

  /** One mailbox: stored count and bytes per priority, oldest and newest message, delayed, its groups. */
  async mailboxInfo(mailbox: string): Promise<Omit<MailboxInfoReply, "error" | "code">> {
    const subject = Subjects.mailboxInfo(targetAddress(mailbox));
    const { mailbox: summary, groups } = await this.call<MailboxInfoReply>(
      subject,
      json({}),
      readReply.envelope,
    );
    return { mailbox: summary, groups };
  }

  /**
   * Deletes the messages of a mailbox that match every filter given, or all of them (delayed ones
   * too) with none; the mailbox and its groups stay. Resolves with how many stored messages went.
   */
  async purgeMailbox(mailbox: string, filter: PurgeFilter = {}): Promise<number> {
    const subject = Subjects.mailboxPurge(targetAddress(mailbox));
    return (await this.call<MailboxPurgeReply>(subject, json(purgeBody(filter)), readReply.envelope)).purged;
  }

  /** Deletes a mailbox with its messages and groups. */
  async deleteMailbox(mailbox: string): Promise<void> {
    await this.call(Subjects.mailboxRemove(targetAddress(mailbox)), json({}), readReply.envelope);
  }

  /** The consumer groups of a mailbox: position, pending, leased, lag in messages and seconds. */
  async listGroups(mailbox: string): Promise<GroupSummary[]> {
    const subject = Subjects.groupList(targetAddress(mailbox));
    return (await this.call<GroupListReply>(subject, json({}), readReply.envelope)).groups;
  }

  /** One consumer group of a mailbox (GROUP_NOT_FOUND when it has none of that name). */
  async groupInfo(mailbox: string, group: string): Promise<GroupSummary> {
    const subject = Subjects.groupInfo(targetAddress(mailbox));
    return (await this.call<GroupInfoReply>(subject, json({ group_name: group }), readReply.envelope)).group;
  }

  /**
   * Restarts a consumer group at a msg_id, a time, or the earliest or latest message: its leases
   * are dropped and its next FETCH starts there. Resolves with the group as it then stands.
   */
  async resetGroup(mailbox: string, group: string, position: GroupResetPosition): Promise<GroupSummary> {
    const subject = Subjects.groupReset(targetAddress(mailbox));
    const body = json(resetBody(group, position));
    return (await this.call<GroupInfoReply>(subject, body, readReply.envelope)).group;
  }

  /**
   * Ends the running leases of `member` (every member's when omitted) in a group now, so the
   * group's other members get those messages at once (a consumer that hangs). Resolves with how
   * many leases ended.
   */
  async releaseLeases(mailbox: string, group: string, member?: string): Promise<number> {
    const subject = Subjects.groupRelease(targetAddress(mailbox));
    const body = member === undefined ? { group_name: group } : { group_name: group, member };
    return (await this.call<GroupReleaseReply>(subject, json(body), readReply.envelope)).released;
  }

  /** The broker: version, uptime, store, connections, memory, disk, cluster (admins only, with users). */
  async serverInfo(): Promise<Omit<ServerInfoReply, "error" | "code">> {
    const {
      error: _ok,
      code: _none,
      ...info
    } = await this.call<ServerInfoReply>(Subjects.serverInfo, json({}), readReply.envelope);
    return info;
  }

  /** Registers (or re-registers) an agent, or an MCP server (`kind: "mcp-server"`); the body is stored and returned by discover() as given. */
  async register(agent: AgentRegistration | McpServerRegistration): Promise<void> {
    await this.call(Subjects.agentRegister, json(requireObject(agent, "register")), readReply.envelope);
  }

  /** Removes an agent from the registry, by its mailbox and/or name. */
  async unregister(agent: AgentUnregisterRequest): Promise<void> {
    await this.call(Subjects.agentUnregister, json(requireObject(agent, "unregister")), readReply.envelope);
  }

  /** Reports an agent's status (a heartbeat), by its mailbox and/or name. */
  async report(report: AgentReportRequest): Promise<void> {
    await this.call(Subjects.agentReport, json(requireObject(report, "report")), readReply.envelope);
  }

  /**
   * Finds agents: all of them (paginated), or by full-text `text` or natural-language `semantic` query.
   * The entries are the registered bodies; the broker's derived `agent_info`, which repeats the
   * body as a string and doubles a reply of A2A cards, comes only with `include_agent_info: true`
   * (`agentInfoOf(entry)` works it out from any entry).
   */
  async discover(query: AgentDiscoverRequest = {}): Promise<AgentEntry[]> {
    const subject = Subjects.agentDiscover;
    const body = { include_agent_info: false, ...requireObject(query, "discover") };
    return (await this.call(subject, json(body), readReply.discover)).agents;
  }

  /** One page of a DISCOVER with its paging fields (`total`, `has_more`, `next_offset`) and any `warning`. */
  async discoverPage(query: AgentDiscoverRequest = {}): Promise<AgentDiscoverReply> {
    const subject = Subjects.agentDiscover;
    const body = { include_agent_info: false, ...requireObject(query, "discover") };
    return this.call(subject, json(body), readReply.discover);
  }

  /**
   * The registrations of one mailbox or one name (names need not be unique), with their last
   * status: a direct lookup, not a search. Empty when there is none.
   */
  async lookupAgents(selector: { mailbox?: string; name?: string }): Promise<AgentEntry[]> {
    const { mailbox, name } = requireObject(selector, "lookupAgents") as { mailbox?: string; name?: string };
    if (mailbox === undefined && name === undefined) {
      throw new Mq9Error("INVALID_REQUEST", "lookupAgents() needs a mailbox or a name", { retryable: false });
    }
    return this.discover({ mailbox, name, include_status: true, limit: 1000 });
  }

  /** Starts REPORTing an agent's status on an interval; stop it with `heartbeat.stop()`. */
  heartbeat(options: HeartbeatOptions): Heartbeat {
    this.assertOpen();
    const heartbeat = new Heartbeat(
      (body) => this.report(body),
      options,
      () => this.heartbeats.delete(heartbeat),
      this.logger,
    );
    this.heartbeats.add(heartbeat);
    return heartbeat;
  }

  /** Consumes a mailbox as an async iterator: `for await (const msg of client.consume(box, { group }))`. */
  consume(mailbox: string, options?: ConsumeOptions): Consumer;
  /** Consumes a mailbox with a handler per message; returns the running consumer. */
  consume(mailbox: string, handler: MessageHandler, options?: ConsumeOptions): Consumer;
  consume(
    mailbox: string,
    handlerOrOptions?: MessageHandler | ConsumeOptions,
    maybeOptions?: ConsumeOptions,
  ): Consumer {
    this.assertOpen();
    const handler = typeof handlerOrOptions === "function" ? handlerOrOptions : undefined;
    const options = (typeof handlerOrOptions === "function" ? maybeOptions : handlerOrOptions) ?? {};
    const consumer = new Consumer(this.source, targetAddress(mailbox), options, handler);
    this.consumers.add(consumer);
    void consumer.closed().then(() => this.consumers.delete(consumer));
    return consumer;
  }

  /** Stops consumers (letting running handlers finish) and heartbeats, then drains and closes the connection. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
      await Promise.all([...this.heartbeats].map((heartbeat) => heartbeat.stop()));
      this.mux.close();
      if (this.nats.isClosed()) return;
      // Draining needs a live connection; while reconnecting there is nothing left to flush.
      if (this.watcher.connected) await this.nats.drain().catch(() => this.nats.close());
      else await this.nats.close();
    })();
    return this.closing;
  }

  /** Resolves when the connection is closed for good: with the error that closed it, if any. */
  async closed(): Promise<Error | undefined> {
    return (await this.nats.closed()) ?? undefined;
  }

  private fetchItems(
    mailAddress: string,
    body: FetchRequest,
    { maxWaitMs, signal, lateItems, trace, atOnce }: FetchCall,
  ): Promise<MessageItem[]> {
    const subject = Subjects.fetch(mailAddress);
    const headers = trace && encodedHeaders(trace);
    // The broker may hold a FETCH for its long-poll, so the timeout starts after that.
    return this.mux.request(
      subject,
      json(body),
      {
        timeoutMs: this.requestTimeoutMs + maxWaitMs,
        signal,
        longPoll: maxWaitMs > 0,
        lateReply: lateItems,
        headers,
        atOnce,
      },
      body.payload_format === "raw" ? readReply.rawMessages : readReply.messages,
    );
  }

  private call<T>(
    subject: string,
    body: Uint8Array,
    read: (data: Uint8Array, subject: string) => T,
  ): Promise<T> {
    return this.mux.request(subject, body, { timeoutMs: this.requestTimeoutMs }, read);
  }

  private assertOpen(): void {
    if (this.closing) {
      throw new Mq9Error("NOT_CONNECTED", "the mq9 client is closed; connect again", { retryable: false });
    }
  }
}

function requireObject<T>(value: T, call: string): T {
  if (!isObject(value)) {
    throw new Mq9Error("INVALID_REQUEST", `${call}() takes a JSON object`, { retryable: false });
  }
  return value;
}
