import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type AgentManifest, type AgentOptions, type Envelope, type MessageContext } from "@mq9/agent";
import { Broker, type BrokerOptions } from "@mq9/broker";
import { connect, type Mq9Client } from "@mq9/client";
import { registryFactory } from "@mq9/registry";
import { until } from "@mq9/testkit";
import { mountOrchestratorApi, Orchestrator, type OrchestratorOptions } from "../src/index.js";

export { until };

export type Handler = (message: Envelope, context: MessageContext, agent: Agent) => unknown;

/** An agent whose work is a function: what the tests and examples need most. */
export class FunctionAgent extends Agent {
  constructor(
    manifest: AgentManifest,
    private readonly handler: Handler,
    options?: AgentOptions,
  ) {
    super(manifest, options);
  }

  override handleMessage(message: Envelope, context: MessageContext): unknown {
    return this.handler(message, context, this);
  }
}

/** Fast heartbeats so liveness and load show up quickly in tests. */
export const FAST_AGENT: AgentOptions = { heartbeatMs: 100, ttlSeconds: 2, onError: () => {} };

export interface World {
  broker: Broker;
  url: string;
  dataDir: string;
  templatesDir: string;
  /** The HTTP API's base URL, when started with `http: true`. */
  api: string;
  orchestrator?: Orchestrator;
  /** Writes a template file into the templates folder. */
  template(file: string, yaml: string): void;
  startOrchestrator(options?: Partial<OrchestratorOptions>): Promise<Orchestrator>;
  /** Starts an agent on its own connection; stopped by close(). */
  agent(manifest: AgentManifest, handler: Handler, options?: AgentOptions): Promise<FunctionAgent>;
  client(): Promise<Mq9Client>;
  close(): Promise<void>;
}

/** A real broker on random ports with a fresh data dir and templates folder; nothing is mocked. */
export async function startWorld(
  options: { http?: boolean; broker?: BrokerOptions; templates?: Record<string, string> } = {},
): Promise<World> {
  const dataDir = mkdtempSync(join(tmpdir(), "mq9-orch-"));
  const templatesDir = join(dataDir, "templates");
  mkdirSync(templatesDir);
  for (const [file, yaml] of Object.entries(options.templates ?? {}))
    writeFileSync(join(templatesDir, file), yaml);
  const agents: Agent[] = [];
  const clients: Mq9Client[] = [];
  const world: World = {
    broker: undefined as unknown as Broker,
    url: "",
    dataDir,
    templatesDir,
    api: "",
    template(file, yaml) {
      writeFileSync(join(templatesDir, file), yaml);
    },
    async startOrchestrator(extra = {}) {
      world.orchestrator = await Orchestrator.start({
        server: world.url,
        templates: templatesDir,
        directoryRefreshMs: 100,
        onError: () => {},
        ...extra,
      });
      return world.orchestrator;
    },
    async agent(manifest, handler, agentOptions) {
      const agent = new FunctionAgent(manifest, handler, { ...FAST_AGENT, ...agentOptions });
      agents.push(agent);
      await agent.start(world.url);
      return agent;
    },
    async client() {
      const client = await connect(world.url);
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(agents.map((a) => a.stop().catch(() => {})));
      await world.orchestrator?.close().catch(() => {});
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await world.broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  world.broker = await Broker.start({
    port: 0,
    dataDir,
    sweepIntervalMs: 100,
    registry: registryFactory({ embedder: "none" }),
    http: options.http
      ? { port: 0, routes: (app) => mountOrchestratorApi(app, () => world.orchestrator) }
      : undefined,
    ...options.broker,
  });
  world.url = `mq9://127.0.0.1:${world.broker.port}`;
  if (world.broker.http) world.api = `http://127.0.0.1:${world.broker.http.port}`;
  return world;
}

/** A promise with its resolve function, for agents that must hold a message until the test says so. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** JSON over HTTP against the orchestrator API. */
// biome-ignore lint/suspicious/noExplicitAny: JSON answers of the API, checked field by field with expect
export type Json = Record<string, any>;

export async function http(
  method: "GET" | "POST",
  url: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}
