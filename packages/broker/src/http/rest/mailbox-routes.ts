import { encodeHeaderBlock, Headers, MQ9_PREFIX, parseMsgIdToken, Subjects } from "@mq9/protocol";
import type { MessagingEngine } from "../../engine/messaging-engine.js";
import type { Mq9Service } from "../../service/mq9-service.js";
import { canInspect } from "../../store/store-inspection.js";
import { ApiError } from "./api-error.js";
import {
  AckBody,
  Acked,
  AddressParams,
  BASE64,
  BrowseQuery,
  Created,
  CreateMailbox,
  Deleted,
  FetchBody,
  GroupDetail,
  GroupList,
  GroupParams,
  GroupRelease,
  GroupReset,
  HistoryQuery,
  MailboxDetail,
  MailboxHistory,
  MailboxList,
  MailboxListQuery,
  MessagePage,
  MessageParams,
  Messages,
  NakBody,
  Naked,
  PeekQuery,
  Purged,
  PurgeFilter,
  QueryQuery,
  Released,
  Retried,
  RetryBody,
  SendMessage,
  Sent,
} from "./api-schemas.js";
import type { MetricsHistory } from "./metrics-history.js";
import { callMq9, replyJson } from "./mq9-call.js";
import type { RestRouter } from "./rest-router.js";

/** The NATS header block a SEND carries for these options (what an SDK would send). */
function sendHeader(body: {
  priority?: string;
  key?: string;
  ttl?: number;
  delay?: number;
  tags?: string[];
  headers?: Record<string, string>;
}): Uint8Array | undefined {
  const lines: [string, string][] = Object.entries(body.headers ?? {});
  if (body.priority !== undefined) lines.push([Headers.priority, body.priority]);
  if (body.key !== undefined) lines.push([Headers.key, body.key]);
  if (body.ttl !== undefined) lines.push([Headers.ttl, String(body.ttl)]);
  if (body.delay !== undefined) lines.push([Headers.delay, String(body.delay)]);
  if (body.tags !== undefined && body.tags.length > 0) lines.push([Headers.tags, body.tags.join(",")]);
  return lines.length === 0 ? undefined : encodeHeaderBlock(lines);
}

/** The answer of the routes beyond the protocol when the store cannot do them (it has no StoreInspection). */
function inspectable(engine: MessagingEngine): MessagingEngine {
  if (canInspect(engine.store)) return engine;
  throw new ApiError(
    501,
    "NOT_SUPPORTED",
    "this broker's store cannot list, describe, purge or delete mailboxes; the mq9 operations (send, fetch, query, delete a message) work",
  );
}

/** Mailboxes and their messages: the mq9 operations (CREATE, SEND, FETCH, ACK, QUERY, DELETE) and the engine's reads. */
export function mountMailboxRoutes(
  router: RestRouter,
  service: Mq9Service,
  engine: MessagingEngine,
  history: MetricsHistory,
): void {
  router.add({
    method: "GET",
    path: "/api/v1/mailboxes",
    tag: "Mailboxes",
    summary: "List mailboxes with their depth per priority (MAILBOX.LIST)",
    query: MailboxListQuery,
    responses: { 200: { description: "the live mailboxes, by address", schema: MailboxList } },
    errors: [400, 501],
    handler: async ({ query, principal }) => {
      inspectable(engine);
      const request = { search: query.search, limit: query.limit };
      return { status: 200, body: await callMq9(service, Subjects.mailboxList, request, { principal }) };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes",
    tag: "Mailboxes",
    summary: "Create a mailbox (MAILBOX.CREATE)",
    body: CreateMailbox,
    responses: { 201: { description: "created", schema: Created } },
    errors: [400, 409],
    handler: async ({ body, principal }) => ({
      status: 201,
      body: await callMq9(service, Subjects.mailboxCreate, body ?? {}, { principal }),
    }),
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address",
    tag: "Mailboxes",
    summary: "A mailbox with its consumer groups' position, lag and leases (MAILBOX.INFO)",
    params: AddressParams,
    responses: { 200: { description: "the mailbox", schema: MailboxDetail } },
    errors: [400, 404, 501],
    handler: async ({ params, principal }) => {
      inspectable(engine);
      const subject = Subjects.mailboxInfo(params.address);
      return { status: 200, body: await callMq9(service, subject, {}, { principal }) };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/history",
    tag: "Mailboxes",
    summary:
      "A mailbox's messages, bytes, SEND and FETCH rates and its groups' lag over a range, kept by the broker",
    params: AddressParams,
    query: HistoryQuery,
    responses: { 200: { description: "oldest first", schema: MailboxHistory } },
    errors: [400, 404, 501],
    handler: async ({ params, query, principal }) => {
      inspectable(engine);
      // Asked as MAILBOX.INFO first: a mailbox that is not there, or not the caller's, answers as INFO does.
      await callMq9(service, Subjects.mailboxInfo(params.address), {}, { principal });
      return { status: 200, body: history.mailbox(params.address, query.range ?? 900) };
    },
  });

  router.add({
    method: "DELETE",
    path: "/api/v1/mailboxes/:address",
    tag: "Mailboxes",
    summary: "Delete a mailbox with its messages and groups (MAILBOX.REMOVE)",
    params: AddressParams,
    responses: { 200: { description: "deleted", schema: Deleted } },
    errors: [400, 404, 501],
    handler: async ({ params, principal }) => {
      inspectable(engine);
      await callMq9(service, Subjects.mailboxRemove(params.address), {}, { principal });
      return { status: 200, body: { deleted: true } };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/purge",
    tag: "Mailboxes",
    summary:
      "Delete the messages of a mailbox that match every filter given, or all of them (MAILBOX.PURGE); it and its groups stay",
    params: AddressParams,
    body: PurgeFilter,
    responses: { 200: { description: "purged", schema: Purged } },
    errors: [400, 404, 501],
    handler: async ({ params, body, principal }) => {
      inspectable(engine);
      const subject = Subjects.mailboxPurge(params.address);
      return { status: 200, body: await callMq9(service, subject, body ?? {}, { principal }) };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/groups",
    tag: "Mailboxes",
    summary: "The consumer groups of a mailbox: position, pending, leased, lag (GROUP.LIST)",
    params: AddressParams,
    responses: { 200: { description: "by name", schema: GroupList } },
    errors: [400, 404, 501],
    handler: async ({ params, principal }) => {
      inspectable(engine);
      const subject = Subjects.groupList(params.address);
      return { status: 200, body: await callMq9(service, subject, {}, { principal }) };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/groups/:group",
    tag: "Mailboxes",
    summary: "One consumer group of a mailbox (GROUP.INFO)",
    params: GroupParams,
    responses: { 200: { description: "the group", schema: GroupDetail } },
    errors: [400, 404, 501],
    handler: async ({ params, principal }) => {
      inspectable(engine);
      const subject = Subjects.groupInfo(params.address);
      const request = { group_name: params.group };
      return { status: 200, body: await callMq9(service, subject, request, { principal }) };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/groups/:group/reset",
    tag: "Mailboxes",
    summary:
      "Restart a consumer group at a msg_id, a time, the earliest or the latest message; its leases are dropped (GROUP.RESET)",
    params: GroupParams,
    body: GroupReset,
    responses: { 200: { description: "the group as it now stands", schema: GroupDetail } },
    errors: [400, 404, 501],
    handler: async ({ params, body, principal }) => {
      inspectable(engine);
      const subject = Subjects.groupReset(params.address);
      const request = { ...body, group_name: params.group };
      return { status: 200, body: await callMq9(service, subject, request, { principal }) };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/groups/:group/release",
    tag: "Mailboxes",
    summary:
      "End a member's (or every member's) running leases now: the group's others get the messages (GROUP.RELEASE)",
    params: GroupParams,
    body: GroupRelease,
    responses: { 200: { description: "how many leases ended", schema: Released } },
    errors: [400, 404],
    handler: async ({ params, body, principal }) => {
      const subject = Subjects.groupRelease(params.address);
      const request = { ...body, group_name: params.group };
      return { status: 200, body: await callMq9(service, subject, request, { principal }) };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/messages",
    tag: "Messages",
    summary: "Send a message (MSG.SEND) with priority, key, ttl, delay and tags",
    params: AddressParams,
    body: SendMessage,
    responses: { 201: { description: "stored; durable once answered", schema: Sent } },
    errors: [400, 404],
    handler: async ({ params, body, principal }) => {
      if (body.encoding === "base64" && !BASE64.test(body.payload)) {
        throw new ApiError(400, "INVALID_REQUEST", "invalid request: body.payload: not base64");
      }
      const raw = Buffer.from(body.payload, body.encoding === "base64" ? "base64" : "utf8");
      const reply = await callMq9(service, Subjects.send(params.address), undefined, {
        raw,
        header: sendHeader(body),
        principal,
      });
      return { status: 201, body: reply };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/messages",
    tag: "Messages",
    summary: "Query messages (MSG.QUERY) by key, tags or time; consumes nothing",
    params: AddressParams,
    query: QueryQuery,
    responses: { 200: { description: "matching live messages, oldest first", schema: Messages } },
    errors: [400, 404],
    handler: async ({ params, query, principal }) => {
      const request = {
        key: query.key,
        tags: query.tags?.split(",").map((tag: string) => tag.trim()),
        since: query.since,
        limit: query.limit,
      };
      return {
        status: 200,
        body: await callMq9(service, Subjects.query(params.address), request, { principal }),
      };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/peek",
    tag: "Messages",
    summary: "Peek at the next messages in delivery order (a stateless FETCH): consumes and leases nothing",
    params: AddressParams,
    query: PeekQuery,
    responses: { 200: { description: "critical, then urgent, then normal", schema: Messages } },
    errors: [400, 404],
    handler: async ({ params, query, principal }) => {
      const request = {
        deliver: query.from_id === undefined ? "earliest" : "from_id",
        from_id: query.from_id,
        config: { num_msgs: query.limit ?? 20, max_wait_ms: 0 },
      };
      return {
        status: 200,
        body: await callMq9(service, Subjects.fetch(params.address), request, { principal }),
      };
    },
  });

  router.add({
    method: "GET",
    path: "/api/v1/mailboxes/:address/browse",
    tag: "Messages",
    summary:
      "Page through a mailbox's messages newest first, filtered by key, tag and priority; consumes nothing",
    params: AddressParams,
    query: BrowseQuery,
    responses: { 200: { description: "one page, newest first", schema: MessagePage } },
    errors: [400, 404],
    handler: async ({ params, query, principal }) => {
      // Asked as QUERY first: a mailbox that is not there, or not the caller's, answers as QUERY does.
      await callMq9(service, Subjects.query(params.address), { limit: 0 }, { principal });
      const limit = query.limit ?? 50;
      // One more than the page: whether an older page exists.
      const found = await engine.browse(params.address, {
        beforeId: query.before_id,
        key: query.key,
        tag: query.tag,
        priority: query.priority,
        limit: limit + 1,
      });
      const page = found.slice(0, limit);
      const more = found.length > limit;
      return {
        status: 200,
        body: {
          ...replyJson({ error: "", messages: page }),
          next_before_id: more ? page[limit - 1].id : null,
        },
      };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/fetch",
    tag: "Messages",
    summary: "Fetch messages (MSG.FETCH), leased to a consumer group when group_name is set",
    params: AddressParams,
    body: FetchBody,
    responses: { 200: { description: "the messages handed out", schema: Messages } },
    errors: [400, 404],
    handler: async ({ params, body, signal, principal }) => ({
      status: 200,
      body: await callMq9(service, Subjects.fetch(params.address), body ?? {}, { signal, principal }),
    }),
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/ack",
    tag: "Messages",
    summary: "Acknowledge a message for a group (MSG.ACK), and those before it in its FETCH",
    params: AddressParams,
    body: AckBody,
    responses: { 200: { description: "acknowledged", schema: Acked } },
    errors: [400, 404],
    handler: async ({ params, body, principal }) => {
      const request = { ...body, mail_address: params.address };
      await callMq9(service, Subjects.ack(params.address), request, { principal });
      return { status: 200, body: { acked: true } };
    },
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/nak",
    tag: "Messages",
    summary:
      "Give a leased message back (MSG.NAK): redelivered after a delay, or to dead letters when terminal",
    params: AddressParams,
    body: NakBody,
    responses: { 200: { description: "given back", schema: Naked } },
    errors: [400, 404],
    handler: async ({ params, body, principal }) => ({
      status: 200,
      body: await callMq9(service, Subjects.nak(params.address), body, { principal }),
    }),
  });

  router.add({
    method: "POST",
    path: "/api/v1/mailboxes/:address/retry",
    tag: "Messages",
    summary: "Send dead letters of this dead-letter mailbox back to their mailbox (MSG.RETRY): one or all",
    params: AddressParams,
    body: RetryBody,
    responses: { 200: { description: "sent back", schema: Retried } },
    errors: [400, 404],
    handler: async ({ params, body, principal }) => ({
      status: 200,
      body: await callMq9(service, Subjects.retry(params.address), body ?? {}, { principal }),
    }),
  });

  router.add({
    method: "DELETE",
    path: "/api/v1/mailboxes/:address/messages/:msg_id",
    tag: "Messages",
    summary: "Delete one message (MSG.DELETE)",
    params: MessageParams,
    responses: { 200: { description: "deleted", schema: Deleted } },
    errors: [400, 404],
    handler: async ({ params, principal }) => {
      // Checked before it becomes a subject token: `1.2` would name message 2 of mailbox `<address>.1`.
      const msgId = parseMsgIdToken(params.msg_id);
      if (!msgId.ok) throw new ApiError(400, "INVALID_REQUEST", msgId.error);
      const subject = `${MQ9_PREFIX}.MSG.DELETE.${params.address}.${msgId.value}`;
      return { status: 200, body: await callMq9(service, subject, {}, { principal }) };
    },
  });
}
