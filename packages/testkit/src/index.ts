/**
 * `@mq9/testkit` — the helpers the mq9 packages' tests share (private; never published).
 * Real test brokers (embedded, on PostgreSQL, as a cluster) of one shape, waiting on conditions, unique
 * names, sample agents and fixtures. Nothing here is a mock: tests run against the real thing.
 *
 * @example
 * ```ts
 * import { boxName, eventually, startBroker } from "@mq9/testkit";
 *
 * const broker = await startBroker();
 * const client = await broker.client();
 * const mailbox = await client.createMailbox({ name: boxName("demo"), ttl: 60 });
 * await client.send(mailbox, "hello");
 * await eventually(async () => (await client.query(mailbox)).length === 1);
 * await broker.close();
 * ```
 */
export {
  CoderExecutor,
  coderCard,
  GatedExecutor,
  gatedCard,
  SlowExecutor,
  sendTextOverHttp,
  slowCard,
  TranslatorExecutor,
  translatorCard,
  userText,
  WriterExecutor,
  writerCard,
} from "./a2a-agents.js";
export {
  type ConnectedTestBroker,
  connected,
  type PostgresPlacement,
  startBroker,
  startBrokerCluster,
  startPostgresBroker,
  type TestBroker,
  type TestBrokerOptions,
} from "./broker.js";
export {
  BROKER_KINDS,
  type BrokerKind,
  type BrokerPlacement,
  brokerKindMissing,
  onEachBrokerKind,
  type StartTestBroker,
  useTestBrokers,
} from "./broker-kinds.js";
export { MQ9_CLI, SERVE_ON_FREE_PORTS } from "./cli.js";
export { type CommandAgent, type CommandAgentOptions, serveCommandAgent } from "./command-agent.js";
export { docsExample, runDocsExample } from "./doc-examples.js";
export { eventually, sleep, until } from "./eventually.js";
export { DESIGN_TEMPLATE } from "./fixtures.js";
export { freePort } from "./free-port.js";
export { type Body, encodeBody, type Mq9RequestOptions, mq9Request, texts } from "./mq9-requests.js";
export { boxName } from "./names.js";
export {
  type NatsServer,
  NatsServerPool,
  type NatsServers,
  type NatsServersOptions,
  natsServerMissing,
  type SecuredNatsOptions,
  type SecuredNatsUser,
  securedNatsConfig,
  startNatsServers,
  systemAccountNatsConfig,
} from "./nats-servers.js";
export { ensureOptionalNodePackages, node22, optionalNodePackages } from "./optional-node.js";
export { OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.js";
export { type PgBouncer, pgbouncerMissing, startPgBouncer } from "./pgbouncer.js";
export {
  PINNED_NATS_SERVER_VERSION,
  pinnedNatsServer,
  pinnedNatsServerMissing,
} from "./pinned-nats-server.js";
export {
  freshSchema,
  type PostgresStandby,
  type PrivatePostgres,
  postgresMissing,
  postgresOsUser,
  startPrivatePostgres,
  usePrivatePostgres,
} from "./private-postgres.js";
export {
  ensurePythonEnv,
  type PythonEnvName,
  pythonMissing,
  skipWithoutPython,
  VENV,
  venvDir,
} from "./python-env.js";
export { randomHeaderBlocks, TRICKY_HEADER_PIECES } from "./random-header-blocks.js";
export { weatherToolsServer } from "./registry-fixtures.js";
export {
  contentAnalysisTemplates,
  repoRoot,
  type SampleAgent,
  type SampleAgentOptions,
  startContentAnalysisAgents,
} from "./sample-agents.js";
export { runSchemathesis, type SchemathesisOptions, type SchemathesisRun } from "./schemathesis.js";
export { type ServeProcess, type SpawnServeOptions, spawnServe } from "./serve.js";
export { type ShouterBroker, startShouterBroker } from "./shouter-broker.js";
export { registerTestTracing, type TestTracing } from "./test-tracing.js";
export { writeWheel } from "./wheels.js";
