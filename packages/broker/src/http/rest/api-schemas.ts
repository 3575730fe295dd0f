import {
  DELIVER_POLICIES,
  MAIL_ADDRESS_MAX_LENGTH,
  MAX_BACKOFF_STEPS,
  MAX_DELIVER_LIMIT,
  MAX_MEMBER_LENGTH,
  MAX_NAK_REASON_LENGTH,
  MAX_REDELIVERY_DELAY_MS,
  PRIORITIES,
} from "@mq9/protocol";
import { z } from "zod";

/**
 * The shapes of the REST API v1: they validate requests and, through openapi-document.ts, are the
 * OpenAPI document, so the two cannot drift. Wire names (snake_case) as in the mq9 protocol.
 */

export const ErrorBody = z
  .object({
    error: z.string().describe("what was wrong and what to do; mq9 operations answer the protocol's text"),
    code: z.string().describe("stable code, e.g. MAILBOX_NOT_FOUND, INVALID_REQUEST, REGISTRY_OFF"),
  })
  .meta({ id: "Error" });

/**
 * The JSON Schema the document shows for a shape whose zod form says how it is read rather than
 * what a client sends: a query-string number is text on the wire, and an integer to the client.
 */
export const documentedAs = new WeakMap<object, Record<string, unknown>>();

const wholeSeconds = z.number().int().min(0);
/** A TTL or delay: at most 10^10 seconds (about 317 years), so its instant stays a whole number of milliseconds. */
const durationSeconds = z.number().int().min(0).max(10_000_000_000);
/** A query-string number: digits only, read as a whole number; documented as an integer. */
export function queryInt(min: number, max: number = Number.MAX_SAFE_INTEGER) {
  const schema = z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
  documentedAs.set(schema, { type: "integer", minimum: min, maximum: max });
  return schema;
}
const queryFlag = z.enum(["true", "false"]).transform((value) => value === "true");
/** One header line's worth: no CR or LF, which would end it. */
const headerText = z.string().regex(/^[^\r\n]*$/, "must not contain line breaks");

export const Priority = z.enum(PRIORITIES).meta({ id: "Priority" });

/** The mq9 rule for a mail_address (protocol mailAddressError): the broker refuses any other. */
const MAIL_ADDRESS = "^[a-z0-9]+(\\.[a-z0-9]+)*$";
const MAIL_ADDRESS_RULE =
  "lowercase letters, digits and single dots, starting and ending with a letter or digit";

export const AddressParams = z.object({
  address: z
    .string()
    .min(1)
    .max(MAIL_ADDRESS_MAX_LENGTH)
    .regex(new RegExp(MAIL_ADDRESS), `must be a mail_address: ${MAIL_ADDRESS_RULE}`)
    .describe("the mailbox's mail_address"),
});

/** A msg_id in a path: checked by the handler, which answers the protocol's own `invalid msg_id` text. */
const msgIdToken = z.string().describe("the message's msg_id");
documentedAs.set(msgIdToken, { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export const MessageParams = AddressParams.extend({
  msg_id: msgIdToken,
});

const PerPriority = z.object({
  critical: z.number().int(),
  urgent: z.number().int(),
  normal: z.number().int(),
});

export const MailboxSummary = z
  .object({
    mail_address: z.string(),
    desc: z.string(),
    ttl: z.number().int().describe("seconds; 0 = never expires"),
    created_at: z.number().int().describe("unix milliseconds"),
    expires_at: z.number().int().nullable().describe("unix milliseconds; null = never"),
    depth: PerPriority.describe("live messages per priority"),
    messages: z.number().int().describe("live messages, all priorities"),
    bytes: z.number().int().describe("bytes the live messages take in the store (header and payload)"),
    bytes_by_priority: PerPriority.describe("`bytes` per priority"),
    oldest_at: z.number().int().nullable().describe("unix milliseconds of the oldest live message"),
    newest_at: z.number().int().nullable().describe("unix milliseconds of the newest live message"),
    delayed: z.number().int().describe("delayed messages not due yet"),
    groups: z.number().int().describe("consumer groups"),
    max_deliver: z.number().int().nullable().describe("default delivery limit of its groups; null = none"),
    dead_letter: z.string().describe("where its dead letters go"),
  })
  .meta({ id: "MailboxSummary" });

export const GroupSummary = z
  .object({
    name: z.string(),
    position: PerPriority.describe("per priority, the lowest msg_id the group has not ACKed (its cursor)"),
    pending: z.number().int().describe("live messages waiting to be delivered (again) to the group"),
    leased: z.number().int().describe("messages leased to a member right now"),
    lag: z.number().int().describe("live messages the group has not ACKed: pending + leased"),
    lag_seconds: z.number().int().describe("age of the oldest live message not ACKed; 0 when none"),
    oldest_unacked_at: z.number().int().nullable().describe("unix milliseconds of that message"),
    redelivered: z.number().int().describe("messages in flight delivered more than once"),
    dead_lettered: z.number().int().describe("messages the group gave up to the dead-letter mailbox"),
    max_deliver: z.number().int().nullable().describe("deliveries before dead letters; null = no limit"),
    backoff_ms: z.array(z.number().int()).describe("wait before the n-th redelivery, in ms"),
    members: z
      .array(z.object({ member: z.string(), leased: z.number().int() }))
      .describe('per member ("" = unnamed), the messages it holds leased now'),
    leases: z
      .array(
        z.object({
          msg_id: z.number().int(),
          member: z.string().nullable(),
          delivery_count: z.number().int(),
          state: z.enum(["leased", "waiting", "dead"]),
          lease_until: z.number().int().describe("unix milliseconds"),
          retry_at: z.number().int().nullable().describe("unix milliseconds a waiting message may go again"),
          reason: z.string().nullable().describe("the last failure's reason"),
        }),
      )
      .optional()
      .describe("the group's messages in flight, by msg_id (at most 100; GROUP.INFO only)"),
  })
  .meta({ id: "Group" });

export const GroupRelease = z
  .object({ member: z.string().optional().describe("only this member's leases; absent: every member's") })
  .meta({ id: "GroupReleaseRequest" });

export const Released = z.object({ released: z.number().int().describe("leases ended") });

export const GroupParams = AddressParams.extend({
  group: z.string().min(1).max(256).describe("the consumer group's name"),
});

export const GroupList = z.object({ groups: z.array(GroupSummary) });

export const GroupDetail = z.object({ group: GroupSummary });

export const GroupReset = z
  .object({
    from_id: z.number().int().min(0).optional().describe("restart at this msg_id"),
    from_time: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("restart at the first message stored at or after these unix seconds"),
    deliver: z
      .enum(["earliest", "latest"])
      .optional()
      .describe("restart at the oldest live message, or after the newest"),
  })
  .describe("exactly one of from_id, from_time and deliver")
  // What the handler checks (protocol's parseGroupResetRequest), said in the document too.
  .meta({
    oneOf: [
      { required: ["from_id"], not: { anyOf: [{ required: ["from_time"] }, { required: ["deliver"] }] } },
      { required: ["from_time"], not: { anyOf: [{ required: ["from_id"] }, { required: ["deliver"] }] } },
      { required: ["deliver"], not: { anyOf: [{ required: ["from_id"] }, { required: ["from_time"] }] } },
    ],
  });

export const PurgeFilter = z
  .object({
    key: z.string().optional().describe("only messages with this key"),
    tag: z.string().optional().describe("only messages with this tag"),
    priority: Priority.optional().describe("only messages of this priority"),
    older_than_s: durationSeconds.optional().describe("only messages stored at least this many seconds ago"),
  })
  .strict()
  .describe("every filter given must hold; none (or no body): every message, delayed ones too")
  .optional();

export const ServerDetail = z.object({
  version: z.string(),
  started_at: z.number().int().describe("unix milliseconds"),
  uptime_s: z.number().int(),
  store: z.string().describe("the store, as the broker describes it"),
  connections: z.number().int().describe("clients of this node's own listener (0 on a cluster node)"),
  subscriptions: z.number().int().nullable().describe("null on a cluster node (nats-server holds them)"),
  memory: z.object({ rss: z.number().int(), heap_used: z.number().int(), heap_total: z.number().int() }),
  disk: z
    .object({ data_dir: z.string(), free_bytes: z.number().int(), used_bytes: z.number().int() })
    .nullable()
    .describe("the data directory; null when the store keeps no files there"),
  cluster: z
    .object({
      cluster: z.string(),
      node: z.string(),
      peers: z.array(z.object({ node: z.string(), state: z.string(), self: z.boolean() })),
    })
    .nullable()
    .describe("null for a broker of its own"),
});

export const MailboxListQuery = z.object({
  search: z.string().optional().describe("only addresses containing this text"),
  limit: queryInt(1, 1000).optional().describe("at most this many (default 200)"),
});

export const MailboxList = z.object({ mailboxes: z.array(MailboxSummary) });

export const MailboxDetail = z.object({ mailbox: MailboxSummary, groups: z.array(GroupSummary) });

export const CreateMailbox = z
  .object({
    name: z
      .string()
      // The engine checks the rule and answers the protocol's own error texts.
      .meta({ pattern: MAIL_ADDRESS, minLength: 1, maxLength: MAIL_ADDRESS_MAX_LENGTH })
      .optional()
      .describe(
        `the address (${MAIL_ADDRESS_RULE}, at most ${MAIL_ADDRESS_MAX_LENGTH}); generated when absent`,
      ),
    ttl: durationSeconds.optional().describe("seconds; 0 = never expires; the broker's default when absent"),
    desc: z.string().optional(),
    max_deliver: wholeSeconds
      .max(MAX_DELIVER_LIMIT)
      .optional()
      .describe("the default delivery limit of its groups (0 = none): then the message goes to dead letters"),
    dead_letter: z
      .string()
      .meta({ pattern: MAIL_ADDRESS, minLength: 1, maxLength: MAIL_ADDRESS_MAX_LENGTH })
      .optional()
      .describe("where its dead letters go; default <name>.dlq"),
  })
  .meta({ id: "CreateMailbox" });

export const Created = z.object({ mail_address: z.string() });

export const Deleted = z.object({ deleted: z.literal(true) });

export const Purged = z.object({ purged: z.number().int().describe("messages deleted") });

export const MessageItem = z
  .object({
    msg_id: z.number().int(),
    payload: z.string().describe("the message bytes in base64"),
    priority: Priority,
    header: z.array(z.number().int()).nullable().describe("the raw NATS header block as bytes"),
    headers: z.record(z.string(), z.string()).optional().describe("the header block as a map"),
    key: z.string().optional(),
    tags: z.array(z.string()).optional(),
    create_time: z.number().int().describe("unix seconds"),
    delivery_count: z
      .number()
      .int()
      .optional()
      .describe("deliveries to the group so far, this one included (fetch with a group)"),
  })
  .meta({ id: "MessageItem" });

export const Messages = z.object({ messages: z.array(MessageItem) });

/** A base64 payload's alphabet (the handler's test too). */
export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const SendMessage = z
  .object({
    payload: z.string().describe("the message: text (UTF-8), or base64 when encoding is base64"),
    encoding: z.enum(["text", "base64"]).optional().describe("how payload is written (default text)"),
    priority: Priority.optional(),
    key: headerText.optional().describe("compaction key: a newer message with it replaces the older"),
    ttl: durationSeconds.optional().describe("message TTL in seconds; 0 = none"),
    delay: durationSeconds.optional().describe("deliver after this many seconds"),
    tags: z.array(headerText.regex(/^[^,]*$/, "must not contain commas")).optional(),
    headers: z.record(headerText, headerText).optional().describe("more header lines, stored as they are"),
  })
  .meta({
    id: "SendMessage",
    // What the handler checks (mailbox-routes.ts): a base64 payload is base64.
    anyOf: [
      { properties: { encoding: { const: "text" } } },
      {
        properties: { encoding: { const: "base64" }, payload: { pattern: BASE64.source } },
        required: ["encoding"],
      },
    ],
  });

export const Sent = z.object({ msg_id: z.number().int().describe("-1 for a delayed message") });

export const PeekQuery = z.object({
  limit: queryInt(1, 100).optional().describe("at most this many (default 20)"),
  from_id: queryInt(0).optional().describe("start at this msg_id"),
});

export const BrowseQuery = z.object({
  before_id: queryInt(0)
    .optional()
    .describe("only messages with a smaller msg_id: the next page, or to start at an id"),
  key: z.string().max(1024).optional().describe("only messages with this key"),
  tag: z.string().max(1024).optional().describe("only messages carrying this tag"),
  priority: Priority.optional().describe("only messages of this priority"),
  limit: queryInt(1, 200).optional().describe("at most this many (default 50)"),
});

export const MessagePage = z.object({
  messages: z.array(MessageItem).describe("newest first"),
  next_before_id: z
    .number()
    .int()
    .nullable()
    .describe("before_id of the next (older) page; null when this is the last"),
});

export const QueryQuery = z.object({
  key: z.string().optional(),
  tags: z.string().optional().describe("comma-separated: messages carrying any of them"),
  since: queryInt(0).optional().describe("unix seconds, exclusive"),
  limit: queryInt(0, 100).optional().describe("default 100"),
});

export const FetchBody = z
  .object({
    group_name: z.string().optional().describe("consumer group; absent or empty = stateless read"),
    deliver: z.enum(DELIVER_POLICIES).optional(),
    from_time: wholeSeconds.optional(),
    from_id: wholeSeconds.optional(),
    force_deliver: z.boolean().optional(),
    member: z
      .string()
      .max(MAX_MEMBER_LENGTH)
      .optional()
      .describe("the consumer's name, shown with its leases"),
    config: z
      .object({
        num_msgs: wholeSeconds.optional(),
        max_wait_ms: wholeSeconds.optional(),
        lease_ms: wholeSeconds.optional(),
        max_deliver: wholeSeconds
          .max(MAX_DELIVER_LIMIT)
          .optional()
          .describe(
            "deliveries before a message goes to the dead-letter mailbox (remembered by the group; 0 = no limit)",
          ),
        backoff_ms: z
          .array(wholeSeconds.max(MAX_REDELIVERY_DELAY_MS))
          .max(MAX_BACKOFF_STEPS)
          .optional()
          .describe(
            "wait before the n-th redelivery, in ms (remembered by the group; the last step repeats)",
          ),
      })
      .optional(),
  })
  .meta({ id: "FetchRequest" });

export const AckBody = z.object({ group_name: z.string(), msg_id: wholeSeconds }).meta({ id: "AckRequest" });

export const Acked = z.object({ acked: z.literal(true) });

export const NakBody = z
  .object({
    group_name: z.string().min(1),
    msg_id: wholeSeconds,
    reason: z
      .string()
      .max(MAX_NAK_REASON_LENGTH)
      .optional()
      .describe("why it failed; kept with the message and in its dead letter"),
    delay_ms: wholeSeconds
      .max(MAX_REDELIVERY_DELAY_MS)
      .optional()
      .describe("wait before it is delivered again (default: the group's backoff)"),
    terminal: z.boolean().optional().describe("straight to the dead-letter mailbox"),
  })
  .meta({ id: "NakRequest" });

export const Naked = z.object({
  dead_letter: z.boolean().describe("true when the message went to the dead-letter mailbox"),
});

export const RetryBody = z
  .object({ msg_id: wholeSeconds.optional().describe("one dead letter; absent: all of them") })
  .meta({ id: "RetryRequest" });

export const Retried = z.object({
  retried: z.number().int().describe("dead letters sent back to their mailbox"),
});

/** What a registration describes: an agent (the default) or an MCP server (mq9's REGISTER `kind`). */
const ResourceKind = z.enum(["agent", "mcp-server"]);
/** Which kinds a listing or discovery answers: agents unless asked. */
const KindFilter = z
  .enum(["agent", "mcp-server", "all"])
  .describe("agent (the default), mcp-server, or all: MCP servers have a url and no mailbox");

/** A DISCOVER entry: the registered body as it was, plus the broker's own fields. */
export const AgentEntry = z
  .looseObject({
    name: z.string(),
    mailbox: z.string().optional().describe("an agent's mailbox (an MCP server has a url instead)"),
    kind: ResourceKind.optional().describe("mcp-server for an MCP server; absent or agent for an agent"),
    url: z.string().optional().describe("an MCP server's URL"),
    agent_info: z.string().optional(),
    _status: z.unknown().optional().describe("the last REPORT body"),
    _last_seen: z.number().int().optional().describe("unix seconds of the last REGISTER or REPORT"),
    _score: z.number().optional().describe("relevance, higher is better"),
    online: z.boolean().optional().describe("the agent heartbeats (has a ttl) and is within it"),
  })
  .meta({ id: "AgentEntry" });

export const AgentListQuery = z.object({
  online: queryFlag.optional().describe("only agents that heartbeat"),
  kind: KindFilter.optional(),
  limit: queryInt(1, 1000).optional().describe("default 200"),
  page: queryInt(1, 1_000_000).optional(),
});

export const AgentParams = z.object({
  mailbox: z.string().min(1).max(1024).describe("the agent's mailbox"),
});

/** Not blank: a character other than a space, tab or line break (the handler's test too). */
export const NOT_BLANK = /[^ \t\n\r]/;

export const Agents = z.looseObject({
  agents: z.array(AgentEntry),
  total: z.number().int().optional().describe("how many agents match in all pages"),
  has_more: z.boolean().optional(),
  warning: z.string().optional(),
});

export const DiscoverBody = z
  .object({
    mode: z
      .enum(["tag", "text", "semantic", "hybrid"])
      .optional()
      .describe("tag: by tags only; hybrid: semantic and full-text fused (default text when query is set)"),
    query: z.string().optional(),
    tags: z.array(z.string()).optional(),
    online: z.boolean().optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    page: z.number().int().min(1).optional(),
    kind: KindFilter.optional(),
  })
  .meta({
    id: "DiscoverRequest",
    // What the handler checks (agent-routes.ts): a tag search needs a tag, the others a query.
    anyOf: [
      { properties: { mode: { const: "tag" }, tags: { minItems: 1 } }, required: ["tags"] },
      {
        properties: { mode: { enum: ["text", "semantic", "hybrid"] }, query: { pattern: NOT_BLANK.source } },
        required: ["query"],
      },
    ],
  });

// An MCP server's URL as the WHATWG URL parser takes it: a dotted IPv4 address, or a host name
// whose labels hold no "--" (no punycode to check) and whose last label starts with a letter
// (else the parser reads the host as an IPv4 number).
const LABEL = "[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*";
const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const PORT = "(?:6553[0-5]|655[0-2]\\d|65[0-4]\\d{2}|6[0-4]\\d{3}|[1-5]\\d{4}|[1-9]\\d{0,3})";
const SERVER_URL = new RegExp(
  `^https?://(?:(?:${OCTET}\\.){3}${OCTET}|(?:${LABEL}\\.)*[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)(?::${PORT})?(?:/[!-~]*)?$`,
);
/** An MCP server's URL as REGISTER takes it: absolute http(s), a host name or address, a port that exists. */
const ServerUrl = z
  .string()
  .max(400)
  .regex(SERVER_URL, "must be an http(s) URL, e.g. https://tools.example.com/mcp");
/** A mail address as REGISTER takes an agent's mailbox. */
const MailAddress = z
  .string()
  .max(128)
  .regex(/^[a-z0-9]+(?:\.[a-z0-9]+)*$/, "must be a mail address: lowercase letters, digits and single dots");
const Ttl = z
  .number()
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER)
  .optional()
  .describe("seconds without REGISTER or REPORT before it is dropped; 0 = never");

/** An agent's REGISTER body: its card (any fields), with the mailbox it reads. */
const AgentRegistration = z
  .looseObject({
    kind: z.literal("agent").optional().describe("what is registered; agent when left out"),
    mailbox: MailAddress.describe("the mailbox the agent reads"),
    name: z.string().optional(),
    description: z.string().optional(),
    payload: z.string().optional().describe("what the agent does, in prose, or its A2A card as JSON"),
    ttl: Ttl,
  })
  .meta({ id: "AgentRegistration" });

/** An MCP server's REGISTER body: no mailbox, reached by its url. */
const McpServerRegistration = z
  .strictObject({
    kind: z.literal("mcp-server"),
    url: ServerUrl.describe("where the server is reached: its key, so registering it again replaces it"),
    name: z.string().optional(),
    description: z.string().optional(),
    version: z.string().optional(),
    tags: z.array(z.string()).optional(),
    server_card: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("the MCP server card (name, description, tools): its tools are searched as skills"),
    ttl: Ttl,
  })
  .meta({ id: "McpServerRegistration" });

/**
 * A REGISTER body: an agent (its card, with `mailbox`) or an MCP server (`kind: "mcp-server"`,
 * `url`, its card in `server_card`); the broker checks it as REGISTER does over NATS.
 */
export const RegisterBody = z
  .union([AgentRegistration, McpServerRegistration])
  .meta({ id: "RegisterRequest" });

export const Registered = z.object({
  registered: z.literal(true),
  kind: ResourceKind,
});

// Blank as UNREGISTER reads it (String.trim's white space), the byte order mark included.
const NotBlank = z
  .string()
  .max(1024)
  .regex(/[^\s\uFEFF]/, "must not be blank");

/** An UNREGISTER: an agent by mailbox and/or name, or an MCP server by url. */
export const UnregisterBody = z
  .union([
    z.strictObject({ mailbox: NotBlank, name: NotBlank.optional() }),
    z.strictObject({ name: NotBlank }),
    z.strictObject({ url: ServerUrl.describe("an MCP server, by the URL it was registered with") }),
  ])
  .meta({ id: "UnregisterRequest" });

export const Unregistered = z.object({ unregistered: z.literal(true) });

export const MetricsSample = z
  .object({
    at: z.number().int().describe("unix milliseconds"),
    connections: z.number().int(),
    sends_per_s: z.number(),
    fetches_per_s: z.number(),
    errors_per_s: z.number(),
    messages: z.number().int(),
    bytes: z.number().int(),
    mailboxes: z.number().int(),
    agents: z.number().int().nullable().describe("registered agents; null when the registry is off"),
    agents_online: z.number().int().nullable(),
  })
  .meta({ id: "MetricsSample" });

export const MetricsSummary = z.object({
  now: MetricsSample,
  requests: z.record(z.string(), z.object({ ok: z.number().int(), errors: z.number().int() })),
  registry: z.boolean().describe("whether the agent registry is on"),
  uptime_s: z.number(),
});

/** The history routes' range: how far back, in seconds (a minute to a day). */
export const HistoryQuery = z.object({
  range: queryInt(60, 86_400)
    .optional()
    .describe("seconds back from now (default 900); up to an hour in 5 s samples, beyond in 1 min ones"),
});

export const MetricsHistory = z.object({
  interval_s: z.number().describe("seconds between the samples: 5 up to an hour back, 60 beyond"),
  samples: z.array(MetricsSample).describe("oldest first; kept by the broker whether or not anyone looks"),
});

const Column = z.array(z.number().nullable()).describe("one value per time in `at`; null where not sampled");

export const MailboxHistory = z
  .object({
    interval_s: z.number().describe("seconds between the samples"),
    tracked: z
      .boolean()
      .describe(
        "false when the mailbox is beyond the mailboxes the broker keeps a history of (then no samples)",
      ),
    at: z.array(z.number().int()).describe("unix milliseconds of each sample, oldest first"),
    series: z.object({
      messages: Column,
      bytes: Column,
      sends_per_s: Column.describe("SENDs answered per second"),
      fetches_per_s: Column.describe("FETCHes answered per second"),
    }),
    groups: z.array(
      z.object({
        name: z.string(),
        series: z.object({
          lag: Column,
          pending: Column,
          leased: Column,
          lag_seconds: Column,
        }),
      }),
    ),
  })
  .meta({ id: "MailboxHistory" });

export const ConnectionListQuery = z.object({
  sort: z
    .enum(["since", "msgs_in", "msgs_out", "bytes_in", "bytes_out", "pending", "subscriptions"])
    .optional()
    .describe("since: oldest first (default); the others: most first"),
  limit: queryInt(1, 10_000).optional().describe("at most this many (default 500)"),
});

export const ConnectionInfo = z
  .object({
    id: z.number().int().describe("the client id the broker gave it (its INFO's client_id)"),
    name: z.string().nullable().describe("the name the client gave in its CONNECT"),
    address: z.string().describe("ip:port it connected from"),
    user: z.string().nullable().describe("the user it signed in as, with users configured"),
    connected_at: z.number().int().describe("unix milliseconds"),
    uptime_s: z.number().int(),
    subscriptions: z.number().int(),
    msgs_in: z.number().int().describe("messages it published (PUB/HPUB)"),
    bytes_in: z.number().int().describe("their payload bytes, headers included"),
    msgs_out: z.number().int().describe("messages delivered to it (MSG/HMSG)"),
    bytes_out: z.number().int().describe("their bytes, protocol lines included"),
    pending_bytes: z.number().int().describe("bytes queued for it that its socket has not taken yet"),
  })
  .meta({ id: "Connection" });

export const ConnectionList = z.object({
  total: z.number().int().describe("open client connections"),
  connections: z.array(ConnectionInfo),
  note: z.string().optional().describe("why the list is empty on a cluster node"),
});

export const ClusterNodeInfo = z
  .object({
    node: z.string().describe("the node's --node-id"),
    instance: z.string().describe("the node id and a random suffix, new at each start"),
    self: z.boolean().describe("whether this is the node that answered"),
    state: z
      .enum(["up", "missing", "down"])
      .describe(
        "missing: not heard for three presence intervals (it died or lost NATS); down after thirty, kept until forgotten (DELETE /api/v1/cluster/nodes/{node}) or for 24 h",
      ),
    since: z
      .number()
      .int()
      .optional()
      .describe("unix milliseconds of its last presence news, for a node that is missing or down"),
    started_at: z.number().int().describe("unix milliseconds"),
    last_heard_ms: z.number().int().describe("milliseconds since its last presence news; 0 for this node"),
    nats_server: z.string().nullable().describe("the nats-server it is connected to"),
    nats_connection: z
      .object({
        server_id: z.string().describe("the nats-server's id (its INFO server_id)"),
        client_id: z.number().int().describe("the connection's id on that server (CONNZ cid)"),
        name: z.string().describe("the connection's name: mq9-<node>-broker"),
      })
      .nullable()
      .describe(
        "the connection it takes requests on, as it last told: what CONNZ lists, and what a system user closes for a hung node",
      ),
    http_port: z.number().int().nullable().describe("its HTTP server's port"),
    http_url: z
      .string()
      .nullable()
      .describe(
        "its HTTP server as other hosts reach it (mq9 serve --node-http-url, else its bound host or machine name)",
      ),
    duties: z
      .array(z.string())
      .describe("once-per-cluster works it holds the lock of now: expiry, registry-expiry, orchestrator"),
  })
  .meta({ id: "ClusterNode" });

export const ClusterRoster = z.object({
  clustered: z
    .boolean()
    .describe("false on a broker of its own (no --cluster): no other fields but nodes, empty"),
  cluster: z.string().optional().describe("the cluster's name, made with its PostgreSQL schema"),
  node: z.string().optional().describe("the answering node's id"),
  nodes: z.array(ClusterNodeInfo).describe("this node first, then the others by node id"),
});

export const ClusterNodeParams = z.object({
  node: z.string().min(1).max(256).describe("the node's --node-id"),
});

export const Forgotten = z.object({ forgotten: z.string().describe("the node id dropped from the roster") });

export const AuthInfo = z.object({
  required: z.boolean(),
  schemes: z
    .array(z.enum(["bearer", "basic"]))
    .describe("how credentials may be sent: bearer (a token), basic (user and password)"),
});
