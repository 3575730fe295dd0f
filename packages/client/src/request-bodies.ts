import type {
  DeliverPolicy,
  FetchConfig,
  FetchRequest,
  MailboxCreateRequest,
  NakRequest,
  QueryRequest,
} from "@mq9/protocol";

/** Options of MAILBOX.CREATE. */
export interface CreateMailboxOptions {
  /** Lowercase letters, digits and single dots, 1-128 characters; omitted: the broker generates one. */
  name?: string;
  /** Seconds until the mailbox and its messages expire; 0 or omitted: never. */
  ttlSeconds?: number;
  /** @deprecated The old name of `ttlSeconds`; still read when `ttlSeconds` is not given. */
  ttl?: number;
  /** Free text stored with the mailbox. */
  desc?: string;
  /**
   * mq9 extension: the default limit of deliveries for the mailbox's groups; a message whose last
   * allowed lease runs out goes to the dead-letter mailbox. 0 or omitted: no limit.
   */
  maxDeliver?: number;
  /** mq9 extension: where dead letters go; default `<name>.dlq`. */
  deadLetter?: string;
}

/** Options of one FETCH. */
export interface FetchOptions {
  /** Consumer group: its position is stored and messages are leased to one member at a time. Omitted: stateless. */
  group?: string;
  /** Where a new group (or a stateless fetch) starts; default latest. */
  deliver?: DeliverPolicy;
  /** Unix seconds, with deliver "from_time". */
  fromTime?: number;
  /** First msg_id, with deliver "from_id". */
  fromId?: number;
  /** Restart an existing group from `deliver`. */
  forceDeliver?: boolean;
  /** Most messages to return (num_msgs); broker default 100. */
  batch?: number;
  /** How long the broker may wait for a first message (long-poll); broker default 500. */
  maxWaitMs?: number;
  /** Lease of the delivered messages for this group member; broker default 30 000. */
  leaseMs?: number;
  /**
   * false: the broker may leave out each message's raw header block (`message.header` is
   * then null); `message.headers` still has every header. Halves the replies of header-heavy
   * messages. Default true.
   */
  headerBytes?: boolean;
  /**
   * false: the broker leaves out each message's decoded header map; `message.headers`
   * then decodes the raw block when it was fetched, else is empty. For consumers that
   * read only the payload. Default true.
   */
  headerMap?: boolean;
  /** mq9 extension: this consumer's name, shown with the leases it holds (default: the connection's name). */
  member?: string;
  /**
   * mq9 extension, remembered by the group: deliveries of a message before it goes to the
   * dead-letter mailbox (0: no limit). Brokers without it ignore it.
   */
  maxDeliver?: number;
  /** mq9 extension, remembered by the group: wait before the n-th redelivery (ms; the last step repeats). */
  backoffMs?: readonly number[];
  /**
   * mq9 extension: the reply carries payloads as bytes after its JSON instead of base64 in it
   * (less to encode, send and decode), and header blocks as bytes there too (`header_format`
   * "raw", unless `headerBytes` is false). A broker without them answers the usual form, read the
   * same. Default true; false asks for the usual form.
   */
  rawPayloads?: boolean;
}

/** Options of NAK (an mq9 extension): how a message given back is delivered again. */
export interface NakOptions {
  /** Why it failed; kept with the message and shown in its dead letter. */
  reason?: string;
  /** Wait before it is delivered again (default: the group's backoff, else at once). */
  delayMs?: number;
  /** Straight to the dead-letter mailbox: it will never succeed. */
  terminal?: boolean;
}

/** Options of QUERY; filters intersect. */
export interface QueryOptions {
  /** The latest message with this compaction key. */
  key?: string;
  /** Messages carrying any of these tags. */
  tags?: readonly string[];
  /** Unix seconds: only messages stored strictly after it. */
  since?: number;
  /** The most recent N (default and maximum 100), returned oldest first. */
  limit?: number;
}

/** The MAILBOX.CREATE body: only the keys that were given. */
export function createBody(options: CreateMailboxOptions): MailboxCreateRequest {
  const body: MailboxCreateRequest = {};
  if (options.name !== undefined) body.name = options.name;
  const ttl = options.ttlSeconds ?? options.ttl;
  if (ttl !== undefined) body.ttl = ttl;
  if (options.desc !== undefined) body.desc = options.desc;
  if (options.maxDeliver !== undefined) body.max_deliver = options.maxDeliver;
  if (options.deadLetter !== undefined) body.dead_letter = options.deadLetter;
  return body;
}

/** The FETCH body; a group of "" is left out, since brokers differ on what it means. */
export function fetchBody(options: FetchOptions): FetchRequest {
  const body: FetchRequest = {};
  if (options.group) body.group_name = options.group;
  if (options.deliver !== undefined) body.deliver = options.deliver;
  if (options.fromTime !== undefined) body.from_time = options.fromTime;
  if (options.fromId !== undefined) body.from_id = options.fromId;
  if (options.forceDeliver !== undefined) body.force_deliver = options.forceDeliver;
  if (options.headerBytes === false) body.include_header = false;
  if (options.headerMap === false) body.include_headers = false;
  if (options.member !== undefined) body.member = options.member;
  if (options.rawPayloads ?? true) {
    body.payload_format = "raw";
    // Header blocks as bytes beside the payloads, decoded only when read; a consumer that left
    // the bytes out keeps the reference form, whose `header` is then absent.
    if (options.headerBytes !== false) body.header_format = "raw";
  }
  const config: FetchConfig = {};
  if (options.batch !== undefined) config.num_msgs = options.batch;
  if (options.maxWaitMs !== undefined) config.max_wait_ms = options.maxWaitMs;
  if (options.leaseMs !== undefined) config.lease_ms = options.leaseMs;
  if (options.maxDeliver !== undefined) config.max_deliver = options.maxDeliver;
  if (options.backoffMs !== undefined) config.backoff_ms = [...options.backoffMs];
  if (Object.keys(config).length > 0) body.config = config;
  return body;
}

/** The NAK body. */
export function nakBody(group: string, msgId: number, options: NakOptions): NakRequest {
  const body: NakRequest = { group_name: group, msg_id: msgId };
  if (options.reason !== undefined) body.reason = options.reason;
  if (options.delayMs !== undefined) body.delay_ms = options.delayMs;
  if (options.terminal) body.terminal = true;
  return body;
}

/** The QUERY body: only the filters that were given. */
export function queryBody(options: QueryOptions): QueryRequest {
  const body: QueryRequest = {};
  if (options.key !== undefined) body.key = options.key;
  if (options.tags !== undefined) body.tags = [...options.tags];
  if (options.since !== undefined) body.since = options.since;
  if (options.limit !== undefined) body.limit = options.limit;
  return body;
}
