/**
 * The broker's defaults, in one place: the broker applies them, and `mq9 serve` starts from the
 * same values (its config schema, its help). The wire's own defaults (ports, payload size, FETCH
 * and QUERY limits) are protocol's `Defaults`.
 */
export const BrokerDefaults = {
  /** Loopback: a broker is reachable from elsewhere only when told to be. */
  host: "127.0.0.1",
  /** The SQLite data directory, relative to the working directory. */
  dataDir: "./mq9-data",
  /**
   * Memory for the newest messages of the embedded store: a consumer that is at most this far
   * behind is served without reading SQLite or the message log. Taken only as messages arrive.
   */
  messageCacheBytes: 64 * 1024 * 1024,
  maxConnections: 65_536,
  /** Bytes queued for a slow client before it is closed. */
  maxPendingBytes: 64 * 1024 * 1024,
  /**
   * Liveness: nats-server pings every 2 minutes and allows 2 unanswered PINGs, which finds a
   * frozen client after about 6 minutes. A frozen agent may hold a long-poll FETCH and leased
   * messages meanwhile, so mq9 checks four times as often: dead within 2 minutes, at the cost of
   * one PING per idle connection every 30 s.
   */
  pingIntervalMs: 30_000,
  maxPingsOut: 2,
  /** How long a group's fetched message is leased before it is delivered again. */
  leaseMs: 30_000,
  /** The longest a FETCH long-poll waits, under the 5 s request timeout of most NATS clients. */
  maxWaitMs: 4_500,
  /** Payload bytes one FETCH reply carries at most. */
  fetchMaxBytes: 8 * 1024 * 1024,
  /** Mailbox TTL in seconds when CREATE gives none; 0 = never expires. */
  defaultMailboxTtlSeconds: 0,
  /**
   * How long a SEND's idempotency key (mq9-idempotency-key, Nats-Msg-Id) is remembered: a repeat within it
   * stores nothing. JetStream's default duplicate window; a client's retries fit in it.
   */
  dedupWindowMs: 120_000,
  /**
   * With users: how long a reply inbox whose connection went away stays its user's. The longest
   * wait of a request is far shorter (nats.js: seconds; a FETCH long-poll: at most a minute), and a
   * client reconnecting after a broker restart comes back within it.
   */
  inboxGraceMs: 120_000,
  /**
   * The pacing of failed sign-ins (AuthThrottle): the wait added per recent failure of a name and
   * its cap, the longest an attempt waits before it is refused unchecked, how long an address keeps
   * its failures, and how many names an address may fail with before every new name waits too.
   */
  authThrottle: { stepMs: 250, maxDelayMs: 1_000, maxWaitMs: 1_000, forgetAfterMs: 60_000, sprayNames: 4 },
  /** The domain in the registry's ARD identifiers: RFC 2606's reserved `.localhost`, as ARD advises for local brokers. */
  ardPublisher: "agent.localhost",
} as const;
