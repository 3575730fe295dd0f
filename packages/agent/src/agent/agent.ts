import { AsyncLocalStorage } from "node:async_hooks";
import {
  type ConsumedMessage,
  type Consumer,
  connect,
  DEFAULT_RETRY_DELAYS_MS,
  type Mq9Client,
  Mq9Error,
} from "@mq9/client";
import { DeadLetters } from "../bus/dead-letters.js";
import {
  type ChildFields,
  childOf,
  createEnvelope,
  type Envelope,
  EnvelopeError,
  type MessageType,
  replyTo,
} from "../bus/envelope.js";
import { readEnvelope, sendEnvelope } from "../bus/envelope-io.js";
import { SeenMessages } from "../bus/loop-guard.js";
import { BusNames, cancelKey, controlMailbox, handledMailbox, replyKey } from "../bus/names.js";
import { type Logger, namedStderrLogger } from "../logger.js";
import {
  type AgentManifest,
  type ResolvedManifest,
  registrationBody,
  resolveManifest,
} from "../manifest/manifest.js";
import { TraceMemory } from "../memory/trace-memory.js";
import { HandledLog } from "./handled-log.js";
import { type ContextSource, HandlerContext } from "./handler-context.js";
import { LazyAbort } from "./lazy-abort.js";

export interface AgentOptions {
  /** Namespace of the orchestrator's mailboxes (router, dead letters, memory); default "orch". */
  namespace?: string;
  /** Time between heartbeats carrying the current load (default 2 000). */
  heartbeatMs?: number;
  /** Seconds without a heartbeat after which the agent counts as dead (default 5 heartbeats, at least 3 s). */
  ttlSeconds?: number;
  /**
   * Lease of fetched messages: a crashed agent's message is delivered again after it (default
   * 30 000). Also how long `stop()` waits for running handlers unless told otherwise.
   */
  leaseMs?: number;
  /**
   * Deliveries of one inbox message before the broker moves it to the dead letters (the
   * orchestrator's, `<namespace>.dead`, for an inbox this agent creates; `mq9 dlq ls <inbox>`
   * reads them): a message that kills the agent each time, or whose answer can never be sent,
   * stops coming back (default 5; 0: no limit). A handler that throws is answered with an error
   * envelope and does not count against it.
   */
  maxDeliver?: number;
  /** Seconds replies are kept in the asker's mailbox (default 7 days; traces are read from them). */
  messageTtlSeconds?: number;
  /**
   * Seconds within which a message created before this instance started is checked against
   * the asker's mailbox for a stored answer, so one re-sent after a restart is not handled
   * twice (default 600).
   */
  dedupWindowSeconds?: number;
  /**
   * Run each handler inside an async context, so that `this.send()` called while it runs
   * continues its message's trace (default true). On Node 20 that context costs every promise
   * of the process a hook call; an agent that sends only through the handler context's `send`
   * (or not at all) may turn it off, and `this.send()` then always starts a new trace.
   */
  trackSends?: boolean;
  /** Where problems are logged (a handler failure, a bad message); default: one line each on stderr. */
  logger?: Logger;
  /** A handler failure or a bad message; default: an error on `logger`. */
  onError?: (error: Error, message?: Envelope) => void;
}

/** Options of `Agent.stop`. */
export interface AgentStopOptions {
  /** Take the agent out of the registry as well (default false: it shows offline after its ttl). */
  unregister?: boolean;
  /**
   * How long to wait for running handlers before aborting their signals and returning
   * (default: the lease, `leaseMs`). Their messages are not ACKed but given back (NAKed): they
   * come back a second later, to this agent's next start or another instance.
   */
  timeoutMs?: number;
}

/** What a handler gets besides the message. */
export interface MessageContext {
  /** The trace's shared memory. */
  memory: TraceMemory;
  /** Aborted when the orchestrator cancels this message's work. */
  signal: AbortSignal;
  /** Unix ms at which this agent took the message. */
  receivedAt: number;
  /** Sends a follow-up message through the router (same trace, one hop further); replies come to this agent. */
  send(fields: ChildFields): Promise<Envelope>;
}

const DEFAULT_HEARTBEAT_MS = 2_000;
const DEFAULT_MAX_DELIVER = 5;
const DEFAULT_MESSAGE_TTL_S = 7 * 86_400;
const MEMORY_CACHE = 1_000;

function isEnvelope(value: unknown): value is Envelope {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Envelope).msg_id === "string" &&
    typeof (value as Envelope).trace_id === "string" &&
    typeof (value as Envelope).msg_type === "string" &&
    Array.isArray((value as Envelope).path)
  );
}

/**
 * An orchestrated agent. Subclasses implement `handleMessage` and answer with
 * `reply(message, type, payload)`. `start()` registers the agent with its manifest,
 * heartbeats its load, and consumes its inbox in a consumer group with at most
 * `max_concurrency` messages at once, so a slow agent's backlog waits in its own
 * mailbox. A msg_id seen before is never handled twice.
 */
export abstract class Agent {
  readonly manifest: ResolvedManifest;
  protected client?: Mq9Client;
  private ownsClient = false;
  private consumer?: Consumer;
  private control?: Consumer;
  /** msg_ids canceled before or while they were handled. */
  private readonly canceled = new SeenMessages(10_000);
  /** Answers that could not be sent yet, by the msg_id they answer; sent when the message comes back. */
  private readonly unsent = new Map<string, { to: string; answer: Envelope }>();
  private heartbeatTimer?: NodeJS.Timeout;
  private heartbeatInFlight?: Promise<void>;
  private stopped = false;
  private readonly names: BusNames;
  private readonly seen = new SeenMessages();
  private readonly running = new Map<string, LazyAbort>();
  /** What every handler context reads from this agent (one object, not closures per message). */
  private readonly contextSource: ContextSource<ChildFields> = {
    memory: (traceId) => this.memory(traceId),
    sendChild: (parent, fields) => this.sendChild(parent, fields),
  };
  private readonly memories = new Map<string, TraceMemory>();
  private readonly heartbeatMs: number;
  private readonly ttlSeconds: number;
  private readonly leaseMs: number;
  private readonly maxDeliver: number;
  private readonly messageTtlSeconds: number;
  private readonly onError: (error: Error, message?: Envelope) => void;
  private readonly logger: Logger;
  private deadLetters?: DeadLetters;
  private handledLog?: HandledLog;
  private handledCount = 0;
  /** The message whose handler is running (with trackSends): `this.send()` inside a handler continues its trace. */
  private readonly handling = new AsyncLocalStorage<Envelope>();
  private readonly trackSends: boolean;
  private startedAt = Number.POSITIVE_INFINITY;
  private readonly dedupWindowMs: number;
  private boundHandler?: (message: Envelope, context: MessageContext) => unknown;
  private duplicateCount = 0;
  private droppedCount = 0;

  constructor(manifest: AgentManifest, options: AgentOptions = {}) {
    this.manifest = resolveManifest(manifest);
    this.names = new BusNames(options.namespace);
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.ttlSeconds = options.ttlSeconds ?? Math.max(3, Math.ceil((5 * this.heartbeatMs) / 1000));
    this.leaseMs = options.leaseMs ?? 30_000;
    this.maxDeliver = options.maxDeliver ?? DEFAULT_MAX_DELIVER;
    this.messageTtlSeconds = options.messageTtlSeconds ?? DEFAULT_MESSAGE_TTL_S;
    this.dedupWindowMs = (options.dedupWindowSeconds ?? 600) * 1000;
    this.trackSends = options.trackSends ?? true;
    const logger = options.logger ?? namedStderrLogger(`agent ${this.manifest.name}`);
    this.logger = logger;
    this.onError =
      options.onError ??
      ((error, message) => logger.error(message ? { msg_id: message.msg_id } : {}, error.message));
  }

  /** Handles one message; return `reply(...)` (or a plain value, sent as a result), or nothing. */
  handleMessage?(message: Envelope, context: MessageContext): unknown;
  /** The design's spelling of handleMessage; a class defines one of the two. */
  handle_message?(message: Envelope, context: MessageContext): unknown;

  /** The answer to `message`: same trace, back to whoever asked, ids and routing filled in. */
  reply(message: Envelope, type: MessageType, payload: unknown): Envelope {
    return replyTo(message, this.manifest.name, type, payload);
  }

  get name(): string {
    return this.manifest.name;
  }

  get mailbox(): string {
    return this.manifest.mailbox;
  }

  /** Messages being handled right now (what heartbeats report). */
  get load(): number {
    return this.running.size;
  }

  /**
   * Messages handled so far, deliveries skipped because their msg_id was seen before, and
   * messages dropped unhandled because their work was canceled before they ran.
   */
  get stats(): { handled: number; duplicates: number; canceled: number } {
    return { handled: this.handledCount, duplicates: this.duplicateCount, canceled: this.droppedCount };
  }

  /** Registers, starts heartbeats and consumes the inbox. `server` is a client or a broker URL. */
  async start(server: Mq9Client | string = "mq9://127.0.0.1:4332"): Promise<this> {
    this.boundHandler = this.resolveHandler();
    this.startedAt = Date.now();
    if (typeof server === "string") {
      this.client = await connect(server, { name: `mq9-agent-${this.manifest.name}` });
      this.ownsClient = true;
    } else {
      this.client = server;
    }
    const client = this.client;
    this.deadLetters = new DeadLetters(client, this.names);
    this.handledLog = new HandledLog(
      client,
      handledMailbox(this.manifest.mailbox),
      Math.max(1, Math.ceil(this.dedupWindowMs / 1000)),
      (error) => this.onError(error),
    );
    const { mailbox } = this.manifest;
    // Its dead letters join the orchestrator's (a new inbox; one made before keeps `<inbox>.dlq`).
    await client.ensureMailbox({ name: mailbox, deadLetter: this.names.deadLetters });
    for (const name of [controlMailbox(mailbox), handledMailbox(mailbox)]) {
      await client.ensureMailbox({ name });
    }
    await this.register();
    // Every instance reads every control message (no group), from now on.
    this.control = client.consume(controlMailbox(this.manifest.mailbox), (m) => this.takeControl(m), {
      deliver: "from_time",
      fromTime: Math.floor(Date.now() / 1000) - 1,
      batch: 100,
      onError: (error) => {
        if (!this.stopped) this.onError(error);
      },
    });
    this.consumer = client.consume(this.manifest.mailbox, (m) => this.take(m), {
      group: this.manifest.name,
      deliver: "earliest",
      concurrency: this.manifest.max_concurrency,
      batch: this.manifest.max_concurrency,
      leaseMs: this.leaseMs,
      maxDeliver: this.maxDeliver,
      // The SDK's own steps, for a lease that ran out (a crash) as for an answer that failed to send.
      backoffMs: DEFAULT_RETRY_DELAYS_MS,
      // The envelope is the JSON payload; the headers mirror it for plain mq9 tools, and their
      // decoded map (kept) carries the W3C trace context the handling's span follows.
      headerBytes: false,
      onError: (error) => {
        if (!this.stopped) this.onError(error);
      },
    });
    this.scheduleHeartbeat();
    return this;
  }

  /**
   * Stops taking messages and heartbeating, and waits for running handlers up to `timeoutMs`
   * (default: the lease); then aborts their signals and returns without waiting further.
   */
  async stop(options: AgentStopOptions = {}): Promise<void> {
    if (this.stopped) return;
    const timeoutMs = options.timeoutMs ?? this.leaseMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new RangeError(`stop: timeoutMs must be a number of milliseconds >= 0, got ${timeoutMs}`);
    }
    this.stopped = true;
    clearTimeout(this.heartbeatTimer);
    await this.heartbeatInFlight;
    // The control mailbox is read until the handlers are done: a cancel still reaches them.
    const abandoned = this.consumer !== undefined && !(await settlesWithin(this.consumer.stop(), timeoutMs));
    if (abandoned) {
      // A handler deaf to its signal may never end; past the lease its message is handed
      // out again anyway, so stop waits no longer than that by default.
      const left = this.running.size;
      for (const cancel of this.running.values()) cancel.abort(new AgentStopped(this.manifest.name));
      if (left > 0) {
        this.logger.warn(
          { running: left, timeout_ms: timeoutMs },
          `stop: ${left} handler${left === 1 ? "" : "s"} still running after ${timeoutMs} ms; aborted them, their messages come back after their lease`,
        );
      }
    }
    await this.control?.stop();
    await this.handledLog?.flush().catch((e: Error) => this.onError(e));
    if (options.unregister) await this.client?.unregister({ mailbox: this.manifest.mailbox }).catch(() => {});
    if (this.ownsClient && this.client) {
      if (!abandoned) await this.client.close();
      else {
        // close() waits for the consumer, which waits for the handlers left running: the
        // connection is closed under them instead, so nothing they return can be sent or ACKed.
        void this.client.close().catch(() => {});
        await this.client.nats.close();
      }
    }
  }

  /**
   * Sends a message through the router. Called while a handler runs, it continues that
   * message's trace one hop further (as the context's send does), so loops built by
   * forwarding agents still meet max_hops and the cycle check (unless `trackSends` is off);
   * elsewhere it starts a trace.
   */
  async send(fields: ChildFields & { max_hops?: number }): Promise<Envelope> {
    const parent = this.trackSends ? this.handling.getStore() : undefined;
    if (parent) return this.sendChild(parent, fields);
    const envelope = createEnvelope({
      msg_type: fields.msg_type ?? "query",
      source: this.manifest.name,
      target: fields.target,
      payload: fields.payload,
      capability: fields.capability,
      intent: fields.intent,
      broadcast: fields.broadcast,
      priority: fields.priority,
      max_hops: fields.max_hops,
      reply_to: fields.reply_to ?? this.manifest.mailbox,
    });
    return sendEnvelope(this.requireClient(), this.names.router, envelope, { ttl: this.messageTtlSeconds });
  }

  /** The shared memory of a trace. */
  memory(traceId: string): TraceMemory {
    let memory = this.memories.get(traceId);
    if (!memory) {
      memory = new TraceMemory(this.requireClient(), traceId, { names: this.names });
      this.memories.set(traceId, memory);
      if (this.memories.size > MEMORY_CACHE) this.memories.delete(this.memories.keys().next().value!);
    }
    return memory;
  }

  /**
   * The subclass's handler: `handleMessage`, or `handle_message` as the design spells it
   * (classes written in plain JavaScript after the design's examples).
   */
  private resolveHandler(): (message: Envelope, context: MessageContext) => unknown {
    const self = this as unknown as Record<string, unknown>;
    for (const name of ["handleMessage", "handle_message"]) {
      const method = self[name];
      if (typeof method === "function") return method.bind(this);
    }
    throw new TypeError(
      `agent ${this.manifest.name} has no handler: define handleMessage(message, context) (or handle_message) in its class`,
    );
  }

  private requireClient(): Mq9Client {
    if (!this.client) throw new Error(`agent ${this.manifest.name} is not started; call start() first`);
    return this.client;
  }

  private async register(): Promise<void> {
    await this.requireClient().register(registrationBody(this.manifest, this.heartbeatMs, this.ttlSeconds));
  }

  private scheduleHeartbeat(): void {
    if (this.stopped) return;
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeatInFlight = this.heartbeat().finally(() => {
        this.heartbeatInFlight = undefined;
        this.scheduleHeartbeat();
      });
    }, this.heartbeatMs);
  }

  private async heartbeat(): Promise<void> {
    const client = this.requireClient();
    const load = this.load;
    try {
      await client.report({
        mailbox: this.manifest.mailbox,
        name: this.manifest.name,
        load,
        max_concurrency: this.manifest.max_concurrency,
        report_info: `${load}/${this.manifest.max_concurrency} busy`,
      });
    } catch (err) {
      if (this.stopped) return;
      // The registry dropped us (a pause longer than our ttl): register again.
      if (err instanceof Mq9Error && err.code === "AGENT_NOT_FOUND") {
        await this.register().catch((e: Error) => this.onError(e));
      } else {
        this.onError(err as Error);
      }
    }
  }

  /** One delivery from the inbox; returning (or throwing) ends it, and the consumer ACKs it. */
  private async take(delivery: ConsumedMessage): Promise<void> {
    const receivedAt = Date.now();
    let message: Envelope;
    try {
      message = readEnvelope(delivery);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      this.onError(new Error(`malformed message in ${this.manifest.mailbox}: ${err.message}`));
      await this.deadLetters?.put(`malformed envelope: ${err.message}`, { raw: delivery.text() });
      return;
    }
    if (message.msg_type === "cancel") {
      this.cancel(message);
      return;
    }
    const pending = this.unsent.get(message.msg_id);
    if (pending) {
      // Handled before, but the answer did not get out: send it now instead of handling again.
      await this.sendAnswer(message, pending.to, pending.answer);
      this.duplicateCount++;
      return;
    }
    if (!this.seen.firstTime(message.msg_id)) {
      this.duplicateCount++;
      return;
    }
    // A message that waited, or came from before this start, may have been canceled while
    // the agent was down or busy with it (a restart forgets what it heard), or handled.
    const [canceledBefore, handledBefore] = this.mayHaveBeenHandled(message, receivedAt)
      ? await Promise.all([this.canceledBefore(message), this.handledBefore(message)])
      : [false, false];
    if (canceledBefore || this.canceled.has(message.msg_id)) {
      this.drop(message);
      return;
    }
    if (handledBefore) {
      this.duplicateCount++;
      return;
    }
    const cancel = new LazyAbort();
    this.running.set(message.msg_id, cancel);
    let outcome: unknown;
    let failure: Error | undefined;
    try {
      const context = new HandlerContext<ChildFields>(this.contextSource, message, cancel, receivedAt);
      outcome = this.trackSends
        ? await this.handling.run(message, () => this.boundHandler!(message, context))
        : await this.boundHandler!(message, context);
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
    } finally {
      this.running.delete(message.msg_id);
    }
    this.handledCount++;
    if (cancel.aborted) {
      // Stopped under it: left un-ACKed (a throw), so the message comes back after its lease.
      if (cancel.reason instanceof AgentStopped) throw cancel.reason;
      return;
    }
    if (failure) this.onError(failure, message);
    let answer: Envelope | undefined;
    if (message.reply_to && message.msg_type !== "result" && message.msg_type !== "error") {
      if (failure) answer = this.reply(message, "error", { error: failure.message });
      else if (isEnvelope(outcome)) answer = outcome;
      else if (outcome !== undefined) answer = this.reply(message, "result", outcome);
    }
    if (answer) await this.sendAnswer(message, message.reply_to!, answer);
    else this.noteHandled(message);
  }

  /**
   * A message that leaves no answer in its asker's mailbox is noted in this agent's own
   * `.seen` mailbox for the dedup window, so a restarted instance finds it was handled.
   */
  private noteHandled(message: Envelope): void {
    this.handledLog?.note(message.msg_id);
  }

  /** Sends an answer; when that fails it is kept, and the message is left un-ACKed to come back. */
  private async sendAnswer(message: Envelope, to: string, answer: Envelope): Promise<void> {
    try {
      await sendEnvelope(this.requireClient(), to, answer, {
        key: replyKey(message.msg_id),
        ttl: this.messageTtlSeconds,
      });
      this.unsent.delete(message.msg_id);
    } catch (err) {
      this.unsent.set(message.msg_id, { to, answer });
      if (this.unsent.size > MEMORY_CACHE) this.unsent.delete(this.unsent.keys().next().value!);
      throw err;
    }
  }

  private async takeControl(delivery: ConsumedMessage): Promise<void> {
    try {
      const message = readEnvelope(delivery);
      if (message.msg_type === "cancel") this.cancel(message);
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      this.onError(
        new Error(`malformed message in ${controlMailbox(this.manifest.mailbox)}: ${err.message}`),
      );
    }
  }

  /** Aborts the handler of the named message, or makes sure it never starts. */
  private cancel(message: Envelope): void {
    const target = (message.payload as { msg_id?: unknown } | null)?.msg_id;
    if (typeof target !== "string") return;
    this.canceled.firstTime(target);
    this.running.get(target)?.abort(new Error("canceled"));
  }

  /** Drops a message whose work was canceled: ACKed (by returning) and not handled. */
  private drop(message: Envelope): void {
    this.droppedCount++;
    this.logger.info(
      { msg_id: message.msg_id, task_id: message.task_id, step_id: message.step_id },
      "canceled before it ran: dropped, not handled",
    );
  }

  /** Whether this agent's control mailbox holds a cancel of the message (sent while it was down). */
  private async canceledBefore(message: Envelope): Promise<boolean> {
    const cancels = await this.requireClient()
      .query(controlMailbox(this.manifest.mailbox), { key: cancelKey(message.msg_id) })
      .catch(() => []);
    if (cancels.length === 0) return false;
    this.canceled.firstTime(message.msg_id);
    return true;
  }

  /**
   * At-least-once delivery can bring back a message another instance already answered
   * (it crashed before its ACK). Such a message is old, so only old ones pay for a look
   * at the asker's mailbox for a stored reply.
   */
  private mayHaveBeenHandled(message: Envelope, receivedAt: number): boolean {
    if (receivedAt - (message.sent_at ?? message.created_at) >= this.leaseMs / 2) return true;
    // Made before this instance started: maybe handled by the one before a restart.
    return message.created_at < this.startedAt && receivedAt - message.created_at < this.dedupWindowMs;
  }

  /** Whether the asker's mailbox holds a reply to the message, or this agent noted it as handled. */
  private async handledBefore(message: Envelope): Promise<boolean> {
    if (message.reply_to) {
      const replies = await this.requireClient()
        .query(message.reply_to, { key: replyKey(message.msg_id) })
        .catch(() => []);
      if (replies.length > 0) return true;
    }
    return (await this.handledLog?.has(message.msg_id).catch(() => false)) ?? false;
  }

  private sendChild(parent: Envelope, fields: ChildFields): Promise<Envelope> {
    const child = childOf(parent, this.manifest.name, {
      ...fields,
      reply_to: fields.reply_to ?? this.manifest.mailbox,
    });
    return sendEnvelope(this.requireClient(), this.names.router, child, { ttl: this.messageTtlSeconds });
  }
}

/** The abort reason of handlers still running when `stop()` gave up waiting for them. */
class AgentStopped extends Error {
  constructor(agent: string) {
    super(`agent ${agent} stopped before this message was handled; it comes back after its lease`);
    this.name = "AgentStopped";
  }
}

/** Whether `promise` settles within `ms`; it is left running either way. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
