import {
  Errors,
  encodeReply,
  encodeSendReply,
  errorReplyOf,
  internalErrorReply,
  type Mq9Command,
  Mq9Error,
  parseAckRequest,
  parseCreateRequest,
  parseFetchRequest,
  parseMq9Subject,
  parseNakRequest,
  parseQueryRequest,
  parseRetryRequest,
  type ReplyBody,
  requestValue,
} from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";
import type { MessagingEngine } from "../engine/messaging-engine.js";
import type { Logger } from "../logger.js";
import type { Registry } from "../registry.js";
import { isOutcomeUnknown } from "../store/storage-error.js";
import type { RequestSpan, RequestTracing } from "../telemetry/request-tracing.js";
import type { Mq9Request, Mq9RequestHandler, Mq9Respond } from "../transport/mq9-request.js";
import { InspectionRequests } from "./inspection-requests.js";
import { MailboxOwnership } from "./ownership.js";
import type { RequestObserver } from "./request-observer.js";
import type { ServerInfo } from "./server-info.js";

/**
 * Waits for the next turn of the event loop. A DISCOVER takes a few hundred microseconds and
 * answers with tens of kilobytes; run back to back, the DISCOVERs of one socket read held the
 * replies that did not fit the socket's send buffer until the last of them was done, and the
 * clients sat idle meanwhile. One turn each lets those replies leave and new requests come in.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Ends a SEND's spans: its store commit, then the request, with the stored message's id. */
function endSendSpan(
  span: RequestSpan,
  committed: (() => void) | undefined,
  err: unknown,
  msgId?: number,
): void {
  committed?.();
  if (err === undefined && msgId !== undefined && msgId >= 0) span.set("messaging.message.id", String(msgId));
  span.end(err);
}

type FetchCommand = Extract<Mq9Command, { op: "msg.fetch" }>;
type AckCommand = Extract<Mq9Command, { op: "msg.ack" }>;

/**
 * Decodes an mq9 request, calls one engine method and builds the JSON reply. Transport-neutral:
 * every transport calls it as its Mq9RequestHandler, the REST API through handle().
 */
export class Mq9Service implements Mq9RequestHandler {
  /** Set when users are configured: reads of a mailbox and changes of a registration need their owner. */
  private readonly ownership: MailboxOwnership | undefined;
  /** The operators' requests (mq9 extensions): LIST, INFO, PURGE, DELETE, groups, SERVER.INFO. */
  private readonly inspection: InspectionRequests;

  constructor(
    private readonly engine: MessagingEngine,
    private readonly logger: Logger,
    private readonly observer?: RequestObserver,
    private readonly registry?: Registry,
    isolated = false,
    serverInfo?: ServerInfo,
    /** The broker's spans; undefined when tracing is off. */
    private readonly tracing?: RequestTracing,
  ) {
    this.ownership = isolated ? new MailboxOwnership(engine) : undefined;
    this.inspection = new InspectionRequests(engine, this.ownership, serverInfo);
  }

  /**
   * Answers a request by calling `respond` with its reply's JSON. A SEND goes to the engine and
   * back through callbacks, without a promise or a reply object (it is the hottest path), and is
   * answered in the run of microtasks that follows the socket read it came in (`prompt` true);
   * every other request through handle(), answered when its work is done.
   */
  answer(request: Mq9Request, respond: Mq9Respond): void {
    const command = parseMq9Subject(request.subject);
    if (command?.op !== "msg.send") {
      void this.handle(request, command).then((reply) => respond(encodeReply(reply), false));
      return;
    }
    const started = performance.now();
    const span = this.tracing?.request(command.op, command.mailAddress, request.header);
    const committed = span?.child("mq9 store commit");
    const done = (err: unknown, msgId?: number, duplicate?: boolean) => {
      const failed = err !== undefined;
      this.observer?.observe(command.op, failed, (performance.now() - started) / 1000, command.mailAddress);
      if (span) endSendSpan(span, committed, err, msgId);
      respond(
        failed ? JSON.stringify(this.errorReply(err, request)) : encodeSendReply(msgId as number, duplicate),
        true,
      );
    };
    try {
      this.engine.send(command.mailAddress, request.payload, request.header, done);
    } catch (err) {
      done(err);
    }
  }

  /** Always resolves with the reply envelope; failures become `{error}`. */
  async handle(request: Mq9Request, command = parseMq9Subject(request.subject)): Promise<ReplyBody> {
    const started = performance.now();
    const mailAddress = command !== undefined && "mailAddress" in command ? command.mailAddress : undefined;
    const span = this.tracing?.request(command?.op ?? "unknown", mailAddress, request.header);
    let reply: ReplyBody;
    try {
      // FETCH and ACK, the consume path's requests, skip dispatch: an async function's frame is
      // saved whole at each await, and dispatch's holds every command's locals.
      // Their replies are made with `error` first: no spread into a new object either.
      if (command?.op === "msg.fetch") reply = await this.fetch(command, request, span);
      else if (command?.op === "msg.ack") reply = await this.ack(command, request);
      else reply = { error: "", ...(await this.dispatch(command, request, span)) };
      span?.end();
    } catch (err) {
      reply = this.errorReply(err, request, command?.op);
      span?.end(err);
    }
    this.observer?.observe(
      command?.op ?? "unknown",
      reply.error !== "",
      (performance.now() - started) / 1000,
      mailAddress,
    );
    return reply;
  }

  /**
   * The reply for a failed request: an Mq9Error's own text and code, a change whose commit went
   * unanswered as OUTCOME_UNKNOWN, anything else logged as internal.
   */
  private errorReply(err: unknown, request: Mq9Request, op?: string): ReplyBody {
    if (err instanceof Mq9Error) return errorReplyOf(err);
    // A commit sent to PostgreSQL and left unanswered: the one error after which something may have changed.
    if (isOutcomeUnknown(err)) {
      this.logger.warn({ err, subject: request.subject }, "mq9 request's outcome unknown");
      const reason = (err as Error).message;
      const text =
        op === "msg.fetch" ? Errors.claimOutcomeUnknown(reason) : Errors.changeOutcomeUnknown(reason);
      return errorReplyOf(new Mq9Error("OUTCOME_UNKNOWN", text));
    }
    this.logger.error({ err, subject: request.subject }, "mq9 request failed");
    return internalErrorReply(err);
  }

  private async dispatch(
    command: Mq9Command | undefined,
    request: Mq9Request,
    span?: RequestSpan,
  ): Promise<Record<string, unknown>> {
    const engine = this.engine;
    const ownership = this.ownership;
    // Without users configured every caller may do everything (single-tenant).
    const caller = ownership === undefined ? undefined : request.principal;
    switch (command?.op) {
      case "mailbox.create": {
        const create = requestValue(parseCreateRequest(request.payload));
        return { mail_address: await engine.createMailbox(create, caller?.name) };
      }
      case "msg.send": {
        const { mailAddress } = command;
        const committed = span?.child("mq9 store commit");
        const sent = await new Promise<{ msg_id?: number; duplicate?: true }>((resolve, reject) =>
          engine.send(mailAddress, request.payload, request.header, (err, id, duplicate) => {
            committed?.();
            if (err !== undefined) return reject(err);
            if (span && id !== undefined && id >= 0) span.set("messaging.message.id", String(id));
            resolve(duplicate ? { msg_id: id, duplicate } : { msg_id: id });
          }),
        );
        return sent;
      }
      case "msg.fetch":
        return this.fetch(command, request, span);
      case "msg.ack":
        return this.ack(command, request);
      case "msg.nak":
        if (ownership) await ownership.check(caller, command.mailAddress, "NAK its messages");
        return engine.nak(command.mailAddress, requestValue(parseNakRequest(request.payload)));
      case "msg.retry":
        if (ownership) await ownership.check(caller, command.mailAddress, "RETRY its dead letters");
        return {
          retried: await engine.retry(command.mailAddress, requestValue(parseRetryRequest(request.payload))),
        };
      case "msg.query": {
        if (ownership) await ownership.check(caller, command.mailAddress, "QUERY it");
        const messages = await engine.query(
          command.mailAddress,
          requestValue(parseQueryRequest(request.payload)),
        );
        return { messages };
      }
      case "msg.delete":
        if (ownership) await ownership.check(caller, command.mailAddress, "DELETE its messages");
        await engine.delete(command.mailAddress, command.msgIdToken);
        return { deleted: true };
      case "agent.register": {
        const owner = ownership === undefined ? undefined : this.owner(caller);
        await this.agents().register(
          request.payload,
          owner,
          owner && ((mailbox) => ownership!.standing(owner, mailbox)),
        );
        return {};
      }
      case "agent.unregister":
        await this.agents().unregister(request.payload, ownership && this.owner(caller));
        return {};
      case "agent.report":
        await this.agents().report(request.payload, ownership && this.owner(caller));
        return {};
      case "agent.discover": {
        await nextTurn();
        const result = await this.agents().discover(request.payload);
        // Paging fields first, the entries last (spliced in as the bytes they are kept as).
        const reply: Omit<ReplyBody, "error"> = {};
        if (result.total !== undefined) reply.total = result.total;
        reply.has_more = result.hasMore;
        if (result.nextOffset !== undefined) reply.next_offset = result.nextOffset;
        if (result.truncated) reply.truncated = true;
        if (result.pendingSkills !== undefined) reply.pending_skills = result.pendingSkills;
        if (result.warning !== undefined) reply.warning = result.warning;
        reply.agentsJson = result.agents;
        return reply;
      }
      case "mailbox.list":
        return this.inspection.list(request.payload, caller);
      case "mailbox.info":
      case "mailbox.purge":
      case "mailbox.remove":
      case "group.list":
      case "group.info":
      case "group.reset":
      case "group.release":
        return this.inspection.mailboxOp(command.op, command.mailAddress, request.payload, caller);
      case "server.info":
        return this.inspection.server(caller);
      default:
        throw new Mq9Error("UNKNOWN_SUBJECT", Errors.unknownSubject(request.subject));
    }
  }

  private async fetch(
    command: FetchCommand,
    request: Mq9Request,
    span: RequestSpan | undefined,
  ): Promise<ReplyBody> {
    const fetch = requestValue(parseFetchRequest(request.payload));
    if (fetch.member === undefined && request.clientName) fetch.member = request.clientName.slice(0, 128);
    if (this.ownership) {
      await this.ownership.check(request.principal, command.mailAddress, "FETCH from it");
    }
    const messages = await this.engine.fetch(
      command.mailAddress,
      fetch,
      request.signal,
      request.undelivered,
      span && (() => span.child("mq9 long-poll wait")),
    );
    span?.set("messaging.batch.message_count", messages.length);
    if (fetch.group_name) span?.set("messaging.consumer.group.name", fetch.group_name);
    const headerParts = { bytes: fetch.include_header !== false, map: fetch.include_headers !== false };
    return {
      error: "",
      messages,
      headerParts,
      rawPayloads: fetch.payload_format === "raw",
      rawHeaders: fetch.header_format === "raw",
    };
  }

  private async ack(command: AckCommand, request: Mq9Request): Promise<ReplyBody> {
    if (this.ownership) {
      await this.ownership.check(request.principal, command.mailAddress, "ACK its messages");
    }
    await this.engine.ack(command.mailAddress, requestValue(parseAckRequest(request.payload)));
    return { error: "" };
  }

  /** With users configured every request has a principal; one without is refused, never trusted. */
  private owner(caller: Principal | undefined): Principal {
    if (caller === undefined) {
      throw new Mq9Error("PERMISSION_DENIED", "permission denied: the request carries no authenticated user");
    }
    return caller;
  }

  private agents(): Registry {
    if (!this.registry)
      throw new Mq9Error("INVALID_REQUEST", "the agent registry is turned off in this broker");
    return this.registry;
  }
}
