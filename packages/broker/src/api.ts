/**
 * `@mq9/broker/api` — the types of the broker's REST API v1 (mailboxes, messages, agents,
 * metrics, the cluster), inferred from the zod schemas that validate its requests and make
 * its OpenAPI document (src/http/rest/api-schemas.ts). Types only: importing them loads
 * nothing, so a browser app or another package can use them without the broker. The task
 * routes' types are the orchestrator's: `@mq9/orchestrator/api`.
 *
 * @example
 * ```ts
 * import type { MailboxList } from "@mq9/broker/api";
 *
 * const res = await fetch("http://127.0.0.1:8080/api/v1/mailboxes");
 * const { mailboxes } = (await res.json()) as MailboxList;
 * for (const m of mailboxes) console.log(m.mail_address, m.messages);
 * ```
 *
 * @module
 */
import type { z } from "zod";
import type * as schema from "./http/rest/api-schemas.js";

/** An error answer: what was wrong and what to do, and a stable code. */
export type ErrorBody = z.output<typeof schema.ErrorBody>;
export type Priority = z.output<typeof schema.Priority>;

export type MailboxSummary = z.output<typeof schema.MailboxSummary>;
export type Group = z.output<typeof schema.GroupSummary>;
/** GET /api/v1/mailboxes */
export type MailboxList = z.output<typeof schema.MailboxList>;
/** GET /api/v1/mailboxes/{address} */
export type MailboxDetail = z.output<typeof schema.MailboxDetail>;
/** POST /api/v1/mailboxes */
export type CreateMailbox = z.input<typeof schema.CreateMailbox>;
export type Created = z.output<typeof schema.Created>;
export type Deleted = z.output<typeof schema.Deleted>;
export type Purged = z.output<typeof schema.Purged>;
/** POST /api/v1/mailboxes/{address}/purge */
export type PurgeFilter = z.input<typeof schema.PurgeFilter>;
/** GET /api/v1/mailboxes/{address}/groups */
export type GroupList = z.output<typeof schema.GroupList>;
/** GET /api/v1/mailboxes/{address}/groups/{group} and its reset */
export type GroupDetail = z.output<typeof schema.GroupDetail>;
/** POST /api/v1/mailboxes/{address}/groups/{group}/reset */
export type GroupReset = z.input<typeof schema.GroupReset>;
/** POST /api/v1/mailboxes/{address}/groups/{group}/release */
export type Released = z.output<typeof schema.Released>;
/** POST /api/v1/mailboxes/{address}/retry */
export type Retried = z.output<typeof schema.Retried>;
/** GET /api/v1/connections */
export type ConnectionList = z.output<typeof schema.ConnectionList>;
export type Connection = z.output<typeof schema.ConnectionInfo>;
/** GET /api/v1/server */
export type ServerDetail = z.output<typeof schema.ServerDetail>;

export type MessageItem = z.output<typeof schema.MessageItem>;
/** Peek, query and fetch answers. */
export type Messages = z.output<typeof schema.Messages>;
/** POST /api/v1/mailboxes/{address}/messages */
export type SendMessage = z.input<typeof schema.SendMessage>;
export type Sent = z.output<typeof schema.Sent>;
/** POST /api/v1/mailboxes/{address}/fetch */
export type FetchRequest = z.input<typeof schema.FetchBody>;
/** POST /api/v1/mailboxes/{address}/ack */
export type AckRequest = z.input<typeof schema.AckBody>;
export type Acked = z.output<typeof schema.Acked>;

export type AgentEntry = z.output<typeof schema.AgentEntry>;
/** GET /api/v1/agents and POST /api/v1/agents/discover */
export type AgentList = z.output<typeof schema.Agents>;
export type DiscoverRequest = z.input<typeof schema.DiscoverBody>;
export type RegisterRequest = z.input<typeof schema.RegisterBody>;
export type UnregisterRequest = z.input<typeof schema.UnregisterBody>;

/** One sample of the live stream (GET /api/v1/stream) and of the history. */
export type MetricsSample = z.output<typeof schema.MetricsSample>;
/** GET /api/v1/metrics */
export type MetricsSummary = z.output<typeof schema.MetricsSummary>;
/** GET /api/v1/metrics/history */
export type MetricsHistory = z.output<typeof schema.MetricsHistory>;
/** GET /api/v1/mailboxes/{address}/browse */
export type MessagePage = z.output<typeof schema.MessagePage>;
/** GET /api/v1/mailboxes/{address}/history */
export type MailboxHistory = z.output<typeof schema.MailboxHistory>;

export type ClusterNode = z.output<typeof schema.ClusterNodeInfo>;
/** GET /api/v1/cluster */
export type ClusterRoster = z.output<typeof schema.ClusterRoster>;
export type Forgotten = z.output<typeof schema.Forgotten>;

/** GET /api/v1/auth: whether the broker wants credentials, and which. */
export type AuthInfo = z.output<typeof schema.AuthInfo>;
