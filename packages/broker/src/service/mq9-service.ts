import {
  Errors,
  type Mq9Command,
  Mq9Error,
  type Mq9Reply,
  type Parsed,
  parseAckRequest,
  parseCreateRequest,
  parseFetchRequest,
  parseMq9Subject,
  parseQueryRequest,
} from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";
import type { MessagingEngine } from "../engine/messaging-engine.js";
import type { Logger } from "../logger.js";
import type { Registry } from "../registry/registry.js";
import type { StoredMessage } from "../store/store.js";
import { encodeMessageItem, type ItemHeaderParts } from "./message-item.js";
import { MailboxOwnership } from "./ownership.js";
import type { RequestObserver } from "./request-observer.js";

/** One mq9 request as any transport hands it over. */
export interface Mq9Request {
  subject: string;
  /** Raw NATS header block, when the request had headers. */
  header?: Uint8Array;
  payload: Uint8Array;
  /** Aborted when the requester is gone: a FETCH then stops waiting and claims nothing. */
  signal?: AbortSignal;
  /** Aborted after the reply when it found no one to take it: a FETCH then gives its leases back. */
  undelivered?: AbortSignal;
  /** Who asked, when users are configured (see Mq9ServiceOptions.isolated). */
  principal?: Principal;
}

/**
 * A reply before encoding; FETCH and QUERY carry the stored messages themselves, and
 * `headerParts` (a FETCH's `include_header` and `include_headers`) says which header forms they carry.
 */
export type ReplyBody = Mq9Reply & {
  messages?: StoredMessage[];
  agentsJson?: (readonly Uint8Array[])[];
  headerParts?: ItemHeaderParts;
} & Record<string, unknown>;

/** A reply's JSON as the transport writes it out: text, or pieces (text or UTF-8 bytes) in order. */
export type ReplyPayload = string | readonly (string | Uint8Array)[];

/**
 * The JSON of a reply, for the transport to write out without building one buffer of it: text
 * (written as UTF-8) for a short reply, pieces for a long one. Message lists are written item by
 * item (see encodeMessageItem); DISCOVER entries are spliced in as the UTF-8 bytes they are kept as.
 */
export function encodeReply(reply: ReplyBody): ReplyPayload {
  // Most replies (SEND, ACK, CREATE) carry neither: no copy of the object needed.
  if (reply.messages === undefined && reply.agentsJson === undefined && reply.headerParts === undefined) {
    return JSON.stringify(reply);
  }
  const { messages, headerParts, agentsJson, ...rest } = reply;
  if (agentsJson) return spliceAgents(JSON.stringify(rest), agentsJson);
  if (!messages) return JSON.stringify(rest);
  return messagePieces(JSON.stringify(rest), messages, headerParts);
}

/** DISCOVER entries arrive as UTF-8 JSON pieces: passed on as they are, not parsed and written again. */
function spliceAgents(head: string, agents: readonly (readonly Uint8Array[])[]): Uint8Array[] {
  const parts: Uint8Array[] = [Buffer.from(`${head.slice(0, -1)},"agents":[`)];
  agents.forEach((pieces, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(...pieces);
  });
  parts.push(CLOSE_AGENTS);
  return parts;
}

const COMMA = Buffer.from(",");
const CLOSE_AGENTS = Buffer.from("]}");

/**
 * Texts of at most about this many characters. V8 puts a string over 128 KiB in its large-object
 * space, fresh pages every time, where pieces of this size reuse the young generation.
 */
const PIECE_CHARS = 32 * 1024;

function messagePieces(head: string, messages: StoredMessage[], headerParts?: ItemHeaderParts): string[] {
  const pieces: string[] = [];
  let text = `${head.slice(0, -1)},"messages":[`;
  for (let i = 0; i < messages.length; i++) {
    if (text.length >= PIECE_CHARS) {
      pieces.push(text);
      text = "";
    }
    text += `${i === 0 ? "" : ","}${encodeMessageItem(messages[i], headerParts)}`;
  }
  pieces.push(`${text}]}`);
  return pieces;
}

/**
 * Waits for the next turn of the event loop. A DISCOVER takes a few hundred microseconds and
 * answers with tens of kilobytes; run back to back, the DISCOVERs of one socket read held the
 * replies that did not fit the socket's send buffer until the last of them was done, and the
 * clients sat idle meanwhile. One turn each lets those replies leave and new requests come in.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function unwrap<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new Mq9Error("INVALID_REQUEST", parsed.error);
  return parsed.value;
}

/**
 * Decodes an mq9 request, calls one engine method and builds the JSON reply.
 * Transport-neutral: the embedded listener and the cluster attachment both use it.
 */
export class Mq9Service {
  /** Set when users are configured: reads of a mailbox and changes of a registration need their owner. */
  private readonly ownership: MailboxOwnership | undefined;

  constructor(
    private readonly engine: MessagingEngine,
    private readonly logger: Logger,
    private readonly observer?: RequestObserver,
    private readonly registry?: Registry,
    isolated = false,
  ) {
    this.ownership = isolated ? new MailboxOwnership(engine) : undefined;
  }

  /**
   * Answers a request by calling `respond` with its reply's JSON. A SEND goes to the engine and
   * back through callbacks, without a promise or a reply object (it is the hottest path), and is
   * answered in the run of microtasks that follows the socket read it came in (`prompt` true);
   * every other request through handle(), answered when its work is done.
   */
  answer(request: Mq9Request, respond: (reply: ReplyPayload, prompt: boolean) => void): void {
    const command = parseMq9Subject(request.subject);
    if (command?.op !== "msg.send") {
      void this.handle(request, command).then((reply) => respond(encodeReply(reply), false));
      return;
    }
    const started = performance.now();
    const done = (err: unknown, msgId?: number) => {
      const failed = err !== undefined;
      this.observer?.observe(command.op, failed, (performance.now() - started) / 1000);
      respond(
        failed ? JSON.stringify(this.errorReply(err, request)) : `{"error":"","msg_id":${msgId}}`,
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
    let reply: ReplyBody;
    try {
      reply = { error: "", ...(await this.dispatch(command, request)) };
    } catch (err) {
      reply = this.errorReply(err, request);
    }
    this.observer?.observe(
      command?.op ?? "unknown",
      reply.error !== "",
      (performance.now() - started) / 1000,
    );
    return reply;
  }

  /** The reply for a failed request: an Mq9Error's own text, anything else logged as internal. */
  private errorReply(err: unknown, request: Mq9Request): ReplyBody {
    if (err instanceof Mq9Error) return { error: err.message };
    this.logger.error({ err, subject: request.subject }, "mq9 request failed");
    return { error: Errors.internal(err instanceof Error ? err.message : String(err)) };
  }

  private async dispatch(
    command: Mq9Command | undefined,
    request: Mq9Request,
  ): Promise<Record<string, unknown>> {
    const engine = this.engine;
    const ownership = this.ownership;
    // Without users configured every caller may do everything (single-tenant).
    const caller = ownership === undefined ? undefined : request.principal;
    switch (command?.op) {
      case "mailbox.create": {
        const create = unwrap(parseCreateRequest(request.payload));
        return { mail_address: await engine.createMailbox(create, caller?.name) };
      }
      case "msg.send": {
        const { mailAddress } = command;
        const msgId = await new Promise<number | undefined>((resolve, reject) =>
          engine.send(mailAddress, request.payload, request.header, (err, id) =>
            err === undefined ? resolve(id) : reject(err),
          ),
        );
        return { msg_id: msgId };
      }
      case "msg.fetch": {
        const fetch = unwrap(parseFetchRequest(request.payload));
        if (ownership) await ownership.check(caller, command.mailAddress, "FETCH from it");
        const messages = await engine.fetch(command.mailAddress, fetch, request.signal, request.undelivered);
        const headerParts = { bytes: fetch.include_header !== false, map: fetch.include_headers !== false };
        return { messages, headerParts };
      }
      case "msg.ack":
        if (ownership) await ownership.check(caller, command.mailAddress, "ACK its messages");
        await engine.ack(command.mailAddress, unwrap(parseAckRequest(request.payload)));
        return {};
      case "msg.query": {
        if (ownership) await ownership.check(caller, command.mailAddress, "QUERY it");
        const messages = await engine.query(command.mailAddress, unwrap(parseQueryRequest(request.payload)));
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
          owner && ((mailbox) => ownership!.mayRegister(owner, mailbox)),
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
      default:
        throw new Mq9Error("UNKNOWN_SUBJECT", Errors.unknownSubject(request.subject));
    }
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
