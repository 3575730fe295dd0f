import {
  type AckRequest,
  Defaults,
  Errors,
  type FetchRequest,
  type MailboxCreateRequest,
  Mq9Error,
  mailAddressError,
  type NakRequest,
  type Priority,
  parseMsgIdToken,
  parseSendOptions,
  type QueryRequest,
  type RetryRequest,
  requestValue,
} from "@mq9/protocol";
import { BrokerDefaults } from "../broker-defaults.js";
import { type Logger, silentLogger } from "../logger.js";
import { canInspectLeases, type GroupLeaseReport } from "../store/lease-inspection.js";
import { canReleaseLeases } from "../store/lease-release.js";
import { type OneTripRequests, servesOneTrip } from "../store/one-trip-requests.js";
import { isOutcomeUnknown } from "../store/storage-error.js";
import type {
  AppendResult,
  ClaimOptions,
  DeliveryPolicy,
  MailboxRecord,
  NewMessage,
  StartPosition,
  Store,
  StoredMessage,
} from "../store/store.js";
import {
  canInspect,
  type GroupStats,
  type MailboxStats,
  type PurgeFilter,
  type StoreInspection,
  type StoreTotals,
} from "../store/store-inspection.js";
import { retryDeadLetters } from "./dead-letter-retry.js";
import { DeadLetterSweeper } from "./dead-letter-sweeper.js";
import { ExpiryScheduler } from "./expiry-scheduler.js";
import { generateMailAddress } from "./mail-address-generator.js";
import { LocalNotifier, type Notifier } from "./notifier.js";
import { SendBatcher } from "./send-batcher.js";
import { readSendHeaders } from "./send-headers.js";

/**
 * Told once a SEND is committed: its msg_id (-1 when delayed), or why it was not stored;
 * `duplicate` when its idempotency key was taken and the msg_id is the original's.
 */
export type SendDone = (err: unknown, msgId?: number, duplicate?: boolean) => void;

export interface MessagingEngineOptions {
  store: Store;
  notifier?: Notifier;
  logger?: Logger;
  now?: () => number;
  /** How long a delivered, un-ACKed message stays with one member of a group. */
  leaseMs?: number;
  /** Upper bound on a FETCH's max_wait_ms, kept below the SDKs' 5 s request timeout. */
  maxWaitMs?: number;
  /** Byte budget of the payloads in one FETCH reply (at least one message is always returned). */
  fetchMaxBytes?: number;
  /** TTL in seconds for mailboxes created without one; 0 = never expire. */
  defaultMailboxTtlSeconds?: number;
  /** How long a SEND's idempotency key is remembered (a repeat within it stores nothing). */
  dedupWindowMs?: number;
  sweepIntervalMs?: number;
  /** Told when messages reach a dead-letter mailbox (for /metrics). */
  onDeadLettered?: (deadLetterAddress: string, count: number) => void;
}

/** Which messages a PURGE deletes: those matching every filter given. */
export interface InspectionPurgeFilter extends Omit<PurgeFilter, "createdUpToMs"> {
  /** Only messages stored at least this many seconds ago. */
  olderThanSeconds?: number;
}

/** Where a group (re)starts: a FETCH's `deliver` policy with its `from_id` or `from_time`. */
export type GroupPosition = Pick<FetchRequest, "deliver" | "from_id" | "from_time">;

/** The wire's error for a SEND whose commit may or may not have happened. */
function outcomeUnknown(err: unknown): Mq9Error {
  const reason = err instanceof Error ? err.message : String(err);
  return new Mq9Error("OUTCOME_UNKNOWN", Errors.outcomeUnknown(reason), { cause: err });
}

/** Where a group starts when the request alone says it (no store query); undefined otherwise. */
function startAtOnce(request: GroupPosition): StartPosition | undefined {
  switch (request.deliver ?? "latest") {
    case "earliest":
      return { fromId: 0 };
    case "from_id":
      return { fromId: request.from_id ?? 0 };
    default:
      return undefined;
  }
}

/** What a FETCH claims, settled before its first claim. */
interface FetchPlan {
  mailbox: string;
  group: string | undefined;
  limit: number;
  start: StartPosition;
  leaseMs: number;
  member: string | undefined;
  policy: DeliveryPolicy | undefined;
  /** A new group starts at the next msg_id, placed by the store (see OneTripRequests). */
  fromNext: boolean;
  deadlineMs: number;
}

function sleep(ms: number): { done: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/**
 * Mailboxes and their messages: the mq9 messaging semantics over a Store.
 * Touches no socket; the transports call one method per request.
 */
export class MessagingEngine {
  readonly store: Store;
  /** The store again when it serves group FETCHes and ACKs in one round trip each. */
  private readonly oneTripStore?: OneTripRequests;
  private readonly notifier: Notifier;
  private readonly logger: Logger;
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly maxWaitMs: number;
  private readonly fetchMaxBytes: number;
  private readonly defaultMailboxTtlSeconds: number;
  private readonly dedupWindowMs: number;
  private readonly batcher: SendBatcher;
  private readonly expiry: ExpiryScheduler;
  private readonly deadLetters: DeadLetterSweeper;
  private closing = false;
  private readonly closed: { promise: Promise<void>; resolve: () => void };

  constructor(options: MessagingEngineOptions) {
    this.store = options.store;
    if (servesOneTrip(this.store)) this.oneTripStore = this.store;
    this.notifier = options.notifier ?? new LocalNotifier();
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.leaseMs = options.leaseMs ?? BrokerDefaults.leaseMs;
    this.maxWaitMs = options.maxWaitMs ?? BrokerDefaults.maxWaitMs;
    this.fetchMaxBytes = options.fetchMaxBytes ?? BrokerDefaults.fetchMaxBytes;
    this.defaultMailboxTtlSeconds =
      options.defaultMailboxTtlSeconds ?? BrokerDefaults.defaultMailboxTtlSeconds;
    this.dedupWindowMs = options.dedupWindowMs ?? BrokerDefaults.dedupWindowMs;
    this.batcher = new SendBatcher(this.store, (batch, results) => this.committed(batch, results), this.now);
    this.expiry = new ExpiryScheduler({
      store: this.store,
      onPromoted: (mailbox) => this.notifier.notify(mailbox),
      sweepIntervalMs: options.sweepIntervalMs ?? 1_000,
      now: this.now,
      logger: this.logger,
    });
    this.deadLetters = new DeadLetterSweeper({
      store: this.store,
      now: this.now,
      logger: this.logger,
      intervalMs: options.sweepIntervalMs ?? 1_000,
      onMoved: (address, count) => {
        this.notifier.notify(address);
        options.onDeadLettered?.(address, count);
      },
    });
    let resolve!: () => void;
    this.closed = { promise: new Promise((r) => (resolve = r)), resolve };
  }

  /** Starts background promotion of delayed messages and expiry. */
  start(): void {
    this.expiry.start();
    this.deadLetters.start();
  }

  /** Creates a mailbox (owned by `owner`, when users are configured) and returns its address. */
  async createMailbox(request: MailboxCreateRequest, owner?: string): Promise<string> {
    const now = this.now();
    const address = request.name ?? generateMailAddress();
    const invalid = mailAddressError(address);
    if (invalid) throw new Mq9Error("INVALID_NAME", invalid);
    if (request.dead_letter !== undefined) {
      const badDeadLetter = mailAddressError(request.dead_letter);
      if (badDeadLetter) throw new Mq9Error("INVALID_NAME", `dead_letter: ${badDeadLetter}`);
    }
    const ttlSeconds = request.ttl ?? this.defaultMailboxTtlSeconds;
    const created = await this.store.createMailbox(
      {
        address,
        ttlSeconds,
        desc: request.desc ?? "",
        createdMs: now,
        expiresMs: ttlSeconds > 0 ? now + ttlSeconds * 1000 : undefined,
        owner,
        maxDeliver: request.max_deliver || undefined,
        deadLetter: request.dead_letter,
      },
      now,
    );
    if (!created) throw new Mq9Error("MAILBOX_EXISTS", Errors.mailboxExists(address));
    return address;
  }

  /**
   * Stores a message and calls `done` once it is committed, with its msg_id (-1 when it is
   * delayed) or the error; a callback, not a promise, because SEND is the hottest path.
   */
  send(mailbox: string, payload: Uint8Array, header: Uint8Array | undefined, done: SendDone): void {
    const options = parseSendOptions(header ? readSendHeaders(header) : undefined);
    if (!options.ok) {
      done(new Mq9Error("INVALID_REQUEST", options.error));
      return;
    }
    const { priority, key, tags, delaySeconds, ttlSeconds, msgId } = options.value;
    const now = this.now();
    const message: NewMessage = {
      mailbox,
      priority,
      key,
      tags,
      header,
      payload,
      sentMs: now,
      dueMs: delaySeconds ? now + delaySeconds * 1000 : undefined,
      expiresMs: ttlSeconds ? now + ttlSeconds * 1000 : undefined,
      dedup: msgId === undefined ? undefined : { key: msgId, untilMs: now + this.dedupWindowMs },
    };
    this.batcher.append(message, (err, result) => {
      if (err !== undefined) done(isOutcomeUnknown(err) ? outcomeUnknown(err) : err);
      else if (result === undefined || "missingMailbox" in result) done(this.missing(mailbox));
      else done(undefined, result.id, result.duplicate === true);
    });
  }

  /**
   * Returns the next messages for a group (leased to this caller) or a stateless reader, waiting
   * up to max_wait_ms. `signal` aborts the wait (the requester is gone: nothing is claimed);
   * `undelivered`, aborted after the reply, gives back the leases the reply handed out (it found
   * no one to take it), when the store can.
   */
  async fetch(
    mailbox: string,
    request: FetchRequest,
    signal?: AbortSignal,
    undelivered?: AbortSignal,
    /** Told when the FETCH starts waiting for messages; the function it returns, when it stops (tracing). */
    onWait?: () => () => void,
  ): Promise<StoredMessage[]> {
    const group = request.group_name || undefined;
    const limit = request.config?.num_msgs ?? Defaults.fetchNumMsgs;
    // A store that finds the mailbox and places a new group in its claim is asked once; a FETCH
    // of nothing claims nothing, so it asks about the mailbox itself.
    const oneTrip =
      group !== undefined && limit > 0 && request.deliver !== "from_time" && this.oneTripStore !== undefined;
    if (!oneTrip) await this.requireMailbox(mailbox);
    if (limit === 0) return [];
    const deadlineMs =
      this.now() + Math.min(request.config?.max_wait_ms ?? Defaults.fetchMaxWaitMs, this.maxWaitMs);
    const leaseMs = request.config?.lease_ms || this.leaseMs;
    const member = request.member;
    const policy =
      request.config?.max_deliver !== undefined || request.config?.backoff_ms !== undefined
        ? { maxDeliver: request.config.max_deliver, backoffMs: request.config.backoff_ms }
        : undefined;
    const reset = group !== undefined && request.force_deliver === true;
    // In one trip, "latest" is placed by the store; earliest and from_id resolve without a query.
    const fromNext = oneTrip && (request.deliver ?? "latest") === "latest";
    const needsStart =
      !fromNext && (oneTrip || group === undefined || reset || !(await this.store.hasGroup(mailbox, group)));
    const start = needsStart
      ? (startAtOnce(request) ?? (await this.resolveStart(mailbox, request)))
      : { fromId: 0 };
    const plan: FetchPlan = { mailbox, group, limit, start, leaseMs, member, policy, fromNext, deadlineMs };
    // Most FETCHes find messages, or do not wait: their claim is made here, outside the waiting
    // loop, whose frame (a try/finally around an await, in a loop) costs a FETCH's allocations.
    if (signal?.aborted) return [];
    const nowMs = this.now();
    const items = await this.claimNow(plan, reset, nowMs);
    let checked = !oneTrip;
    // Nothing claimed in one trip: an empty mailbox waits, a missing one is an error.
    if (!checked && items.length === 0) {
      await this.requireMailbox(mailbox);
      checked = true;
    }
    if (group && items.length > 0)
      this.giveBackIfUndelivered(mailbox, group, items, nowMs + leaseMs, undelivered);
    if (items.length > 0 || nowMs >= deadlineMs || this.closing) return items;
    return this.waitForMessages(plan, checked, signal, undelivered, onWait);
  }

  /** A FETCH's claim (a group's) or read (without a group) at `nowMs`. */
  private claimNow(plan: FetchPlan, reset: boolean, nowMs: number): Promise<StoredMessage[]> {
    const { mailbox, group, limit, start } = plan;
    const maxBytes = this.fetchMaxBytes;
    if (group === undefined) return this.store.read(mailbox, start, { limit, maxBytes, nowMs });
    // Spelled out, not spread from the read's options: a spread grown by six fields was the
    // costliest allocation of a FETCH.
    const options: ClaimOptions = {
      limit,
      maxBytes,
      nowMs,
      start,
      reset,
      leaseMs: plan.leaseMs,
      member: plan.member,
      policy: plan.policy,
    };
    return this.claim(mailbox, group, options, plan.fromNext);
  }

  /**
   * A FETCH whose first claim found nothing and whose wait has not run out: claims again with a
   * watch on the mailbox set, then waits for a SEND, the deadline, the requester's going or the
   * broker's closing, and claims again.
   */
  private async waitForMessages(
    plan: FetchPlan,
    mailboxChecked: boolean,
    signal: AbortSignal | undefined,
    undelivered: AbortSignal | undefined,
    onWait: (() => () => void) | undefined,
  ): Promise<StoredMessage[]> {
    const { mailbox, group, leaseMs, deadlineMs } = plan;
    let checked = mailboxChecked;
    let stopWaiting = () => {};
    const gone = new Promise<void>((resolve) => {
      stopWaiting = resolve;
    });
    signal?.addEventListener("abort", stopWaiting);
    try {
      for (;;) {
        // Nobody would receive these messages: leasing them would only delay them.
        if (signal?.aborted) return [];
        // Watched from before the claim, so that a SEND after the claim's read wakes the wait.
        const watch = this.notifier.watch(mailbox);
        try {
          const nowMs = this.now();
          const items = await this.claimNow(plan, false, nowMs);
          if (!checked && items.length === 0) {
            await this.requireMailbox(mailbox);
            checked = true;
          }
          if (group && items.length > 0)
            this.giveBackIfUndelivered(mailbox, group, items, nowMs + leaseMs, undelivered);
          if (items.length > 0 || nowMs >= deadlineMs || this.closing) return items;
          const timer = sleep(deadlineMs - nowMs);
          const waited = onWait?.();
          await Promise.race([watch.fired, timer.done, this.closed.promise, gone]);
          waited?.();
          timer.cancel();
        } finally {
          watch.cancel();
        }
      }
    } finally {
      signal?.removeEventListener("abort", stopWaiting);
    }
  }

  /** Once `undelivered` aborts, ends the leases this claim set, and wakes the group's other waiters. */
  private giveBackIfUndelivered(
    mailbox: string,
    group: string,
    items: readonly StoredMessage[],
    leaseUntilMs: number,
    undelivered: AbortSignal | undefined,
  ): void {
    const store = this.store;
    if (!undelivered || !canReleaseLeases(store)) return;
    const ids = items.map((item) => item.id);
    const giveBack = () => {
      store.releaseLeases(mailbox, group, ids, leaseUntilMs).then(
        (released) => {
          if (released === 0) return;
          this.logger.info(
            { mailbox, group, released },
            "fetch: the requester was gone when its reply left; gave its leases back to the group",
          );
          this.notifier.notify(mailbox);
        },
        (err: unknown) =>
          this.logger.warn(
            { err, mailbox, group },
            "fetch: could not give back the leases of an undelivered reply; they run out",
          ),
      );
    };
    if (undelivered.aborted) giveBack();
    else undelivered.addEventListener("abort", giveBack, { once: true });
  }

  /** Acknowledges a message and those delivered before it in the same FETCH reply. */
  async ack(mailbox: string, request: AckRequest): Promise<void> {
    // Go and C# consume loops ACK with an empty group after stateless fetches.
    if (request.group_name === "") return;
    const oneTrip = this.oneTripStore !== undefined;
    if (!oneTrip) await this.requireMailbox(mailbox);
    const acked = await this.store.ack(mailbox, request.group_name, request.msg_id, this.now());
    if (acked) return;
    if (oneTrip) await this.requireMailbox(mailbox);
    throw new Mq9Error("MESSAGE_NOT_FOUND", Errors.messageNotFound);
  }

  /**
   * Gives a leased message back (see NakRequest): delivered again after its delay, or moved to
   * the dead-letter mailbox when terminal or out of deliveries. An error means nothing changed.
   */
  async nak(mailbox: string, request: NakRequest): Promise<{ dead_letter: boolean }> {
    await this.requireMailbox(mailbox);
    const result = await this.store.nak(mailbox, request.group_name, request.msg_id, {
      nowMs: this.now(),
      reason: request.reason,
      delayMs: request.delay_ms,
      terminal: request.terminal,
    });
    if (!result.found) throw new Mq9Error("MESSAGE_NOT_FOUND", Errors.messageNotLeased);
    if (result.deadLetter) this.deadLetters.kick();
    else this.wakeAfter(mailbox, request.delay_ms ?? 0);
    return { dead_letter: result.deadLetter };
  }

  /** Moves dead letters of `deadLetterAddress` back to the mailboxes they came from; returns how many. */
  async retry(deadLetterAddress: string, request: RetryRequest): Promise<number> {
    await this.requireMailbox(deadLetterAddress);
    return retryDeadLetters(this.store, deadLetterAddress, request.msg_id, this.now, (mailbox) =>
      this.notifier.notify(mailbox),
    );
  }

  /** Wakes the mailbox's waiting FETCHes once a message given back may be delivered again. */
  private wakeAfter(mailbox: string, delayMs: number): void {
    if (delayMs <= 0) {
      this.notifier.notify(mailbox);
      return;
    }
    setTimeout(() => this.notifier.notify(mailbox), delayMs).unref();
  }

  /** A group's claim; `fromNext`: a new group starts at the mailbox's next id, placed by the store. */
  private claim(
    mailbox: string,
    group: string,
    options: ClaimOptions,
    fromNext: boolean,
  ): Promise<StoredMessage[]> {
    // The store places the new group: options.start is not used.
    if (fromNext && this.oneTripStore) return this.oneTripStore.claimFromNext(mailbox, group, options);
    return this.store.claim(mailbox, group, options);
  }

  /** Live messages matching the filters: the most recent `limit`, oldest first. Touches no group. */
  async query(mailbox: string, request: QueryRequest): Promise<StoredMessage[]> {
    await this.requireMailbox(mailbox);
    return this.store.query(mailbox, {
      key: request.key,
      tags: request.tags && request.tags.length > 0 ? request.tags : undefined,
      createdFromMs: request.since === undefined ? undefined : (request.since + 1) * 1000,
      limit: Math.min(request.limit ?? Defaults.queryLimit, Defaults.queryMaxLimit),
      nowMs: this.now(),
    });
  }

  /**
   * One page of a mailbox's live messages, newest first: those before `beforeId` (all, when
   * absent) that match every filter given. Touches no group (the dashboard's browsing).
   */
  async browse(
    mailbox: string,
    page: { beforeId?: number; key?: string; tag?: string; priority?: Priority; limit: number },
  ): Promise<StoredMessage[]> {
    await this.requireMailbox(mailbox);
    const messages = await this.store.query(mailbox, {
      key: page.key,
      tags: page.tag === undefined ? undefined : [page.tag],
      priority: page.priority,
      beforeId: page.beforeId,
      limit: page.limit,
      nowMs: this.now(),
    });
    return messages.reverse();
  }

  /** Deletes one message of the mailbox. */
  async delete(mailbox: string, msgIdToken: string): Promise<void> {
    const msgId = requestValue(parseMsgIdToken(msgIdToken));
    await this.requireMailbox(mailbox);
    if (!(await this.store.deleteMessage(mailbox, msgId))) {
      throw new Mq9Error("MESSAGE_NOT_FOUND", Errors.messageNotFound);
    }
  }

  /** Live mailboxes whose address contains `search`, with their depth per priority (not a protocol operation). */
  async listMailboxes(options: { search?: string; limit: number }): Promise<MailboxStats[]> {
    return this.inspection().mailboxStats(this.now(), options);
  }

  /** How much the store holds (live mailboxes, messages, bytes). */
  async totals(): Promise<StoreTotals> {
    return this.inspection().totals(this.now());
  }

  /** One live mailbox with its depth and its consumer groups' lag. */
  async describeMailbox(address: string): Promise<{ mailbox: MailboxStats; groups: GroupStats[] }> {
    const inspection = this.inspection();
    const now = this.now();
    const [mailbox] = await inspection.mailboxStats(now, { search: address, exact: true, limit: 1 });
    const groups = mailbox && (await inspection.groupStats(address, now));
    if (!mailbox || !groups) throw this.missing(address);
    return { mailbox, groups };
  }

  /** Deletes a mailbox with its messages and groups (not a protocol operation). */
  async deleteMailbox(address: string): Promise<void> {
    if (!(await this.inspection().deleteMailbox(address, this.now()))) throw this.missing(address);
  }

  /**
   * Deletes the messages of a mailbox that match every filter given (all of them, delayed ones
   * too, with none); the mailbox and its groups stay. Returns how many went.
   */
  async purgeMailbox(address: string, filter: InspectionPurgeFilter = {}): Promise<number> {
    const now = this.now();
    const { olderThanSeconds, ...rest } = filter;
    const storeFilter: PurgeFilter =
      olderThanSeconds === undefined ? rest : { ...rest, createdUpToMs: now - olderThanSeconds * 1000 };
    const purged = await this.inspection().purgeMailbox(address, now, storeFilter);
    if (purged === undefined) throw this.missing(address);
    return purged;
  }

  /** The consumer groups of a mailbox, by name, with their position, lag and leases. */
  async groups(address: string): Promise<GroupStats[]> {
    const groups = await this.inspection().groupStats(address, this.now());
    if (groups === undefined) throw this.missing(address);
    return groups;
  }

  /** One consumer group of a mailbox. */
  async group(address: string, name: string): Promise<GroupStats> {
    const found = (await this.groups(address)).find((group) => group.name === name);
    if (!found) throw new Mq9Error("GROUP_NOT_FOUND", Errors.groupMissing(address, name));
    return found;
  }

  /** What a group holds in flight (at most `limit` leases); undefined when the store cannot say. */
  async groupLeases(address: string, name: string, limit: number): Promise<GroupLeaseReport | undefined> {
    if (!canInspectLeases(this.store)) return undefined;
    return this.store.groupLeases(address, name, this.now(), limit);
  }

  /** Ends the running leases of `member` (every member's when undefined) now; returns how many. */
  async releaseLeases(address: string, name: string, member: string | undefined): Promise<number> {
    if (!canInspectLeases(this.store)) {
      throw new Mq9Error("INVALID_REQUEST", "this broker's store cannot release leases");
    }
    await this.requireMailbox(address);
    const released = await this.store.releaseMemberLeases(address, name, member, this.now());
    if (released === undefined) throw new Mq9Error("GROUP_NOT_FOUND", Errors.groupMissing(address, name));
    if (released > 0) this.notifier.notify(address);
    return released;
  }

  /**
   * Restarts a consumer group at a position, as a FETCH with `force_deliver` would: its leases
   * and ACKs are dropped and its next FETCH starts there. Returns the group as it then stands.
   */
  async resetGroup(address: string, name: string, position: GroupPosition): Promise<GroupStats> {
    const inspection = this.inspection();
    await this.requireMailbox(address);
    const start = await this.resolveStart(address, position);
    if (!(await inspection.resetGroup(address, name, start.fromId, this.now()))) {
      throw new Mq9Error("GROUP_NOT_FOUND", Errors.groupMissing(address, name));
    }
    // Members waiting on the mailbox take the messages the reset gave back.
    this.notifier.notify(address);
    return this.group(address, name);
  }

  private inspection(): StoreInspection {
    if (!canInspect(this.store)) {
      throw new Mq9Error("INVALID_REQUEST", "this broker's store cannot list, delete or purge mailboxes");
    }
    return this.store;
  }

  /** Finishes pending commits, wakes long-polls, stops background work. Does not close the store. */
  async close(): Promise<void> {
    this.closing = true;
    this.closed.resolve();
    await this.batcher.drained();
    await this.expiry.stop();
    await this.deadLetters.stop();
    await this.notifier.close();
  }

  private async resolveStart(mailbox: string, request: GroupPosition): Promise<StartPosition> {
    switch (request.deliver ?? "latest") {
      case "earliest":
        return { fromId: 0 };
      case "from_id":
        return { fromId: request.from_id ?? 0 };
      case "from_time": {
        const fromMs = (request.from_time ?? 0) * 1000;
        return { fromId: await this.store.firstIdCreatedAtOrAfter(mailbox, fromMs), fromCreatedMs: fromMs };
      }
      default:
        return { fromId: await this.store.nextMessageId(mailbox) };
    }
  }

  /** The live mailbox, or undefined. */
  mailbox(address: string): Promise<MailboxRecord | undefined> {
    return this.store.getMailbox(address, this.now());
  }

  private async requireMailbox(mailbox: string): Promise<void> {
    if (!(await this.store.getMailbox(mailbox, this.now()))) throw this.missing(mailbox);
  }

  private missing(mailbox: string): Mq9Error {
    return new Mq9Error("MAILBOX_NOT_FOUND", Errors.mailboxMissing(mailbox));
  }

  private committed(batch: readonly NewMessage[], results: AppendResult[]): void {
    const woken = new Set<string>();
    batch.forEach((message, i) => {
      const result = results[i];
      if ("missingMailbox" in result || result.duplicate) return;
      if (message.dueMs !== undefined) this.expiry.delayedStored(message.dueMs);
      else woken.add(message.mailbox);
    });
    for (const mailbox of woken) this.notifier.notify(mailbox);
  }
}
