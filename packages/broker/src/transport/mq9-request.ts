import type { ReplyPayload } from "@mq9/protocol";
import type { Principal } from "../auth/principal.js";

/**
 * One mq9 request, as every transport hands it over: the embedded listener, a cluster's queue
 * group and the REST API. A new transport fills in what it knows of the requester; a new request
 * kind reads what it needs from here.
 */
export interface Mq9Request {
  subject: string;
  /**
   * Raw NATS header block ("NATS/1.0\r\n…\r\n\r\n"), when the request had headers. Like
   * `payload`, it may be a view into a transport's read buffer: copy it to keep it past the call.
   */
  header?: Uint8Array;
  payload: Uint8Array;
  /** Aborted when the requester is gone: a FETCH then stops waiting and claims nothing. */
  signal?: AbortSignal;
  /** Aborted after the reply when it found no one to take it: a FETCH then gives its leases back. */
  undelivered?: AbortSignal;
  /** Who asked, when the transport authenticates its clients (the embedded listener with users). */
  principal?: Principal;
  /** The requester's connection name (NATS CONNECT `name`), when the transport knows it. */
  clientName?: string;
}

/**
 * Sends a request's reply to its requester. `prompt`: the reply was made while the request's
 * input was still being handled (a SEND's), so the embedded listener writes it with that input's
 * other output; a later one waits for the end of the event-loop turn. Other transports ignore it.
 */
export type Mq9Respond = (reply: ReplyPayload, prompt: boolean) => void;

/** What every transport calls with each mq9 request: in a broker, the mq9 service (Mq9Service). */
export interface Mq9RequestHandler {
  /** Answers `request` by calling `respond` once with its reply. */
  answer(request: Mq9Request, respond: Mq9Respond): void;
}
