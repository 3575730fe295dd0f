import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, type AgentManifest, type AgentOptions, type Envelope, type MessageContext } from "@mq9/agent";
import type { Broker } from "@mq9/broker";
import type { Mq9Client } from "@mq9/client";
import { startBroker, type TestBroker, type TestBrokerOptions, until } from "@mq9/testkit";
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
  /** The test broker the world runs on (`@mq9/testkit`). */
  testBroker: TestBroker;
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

/**
 * A real embedded broker (the testkit's, without an embedder) and a templates folder in its
 * data dir; the orchestrator's HTTP API is mounted with `http: true`. Nothing is mocked.
 */
export async function startWorld(
  options: { http?: boolean; broker?: TestBrokerOptions; templates?: Record<string, string> } = {},
): Promise<World> {
  let orchestrator: Orchestrator | undefined;
  const t = await startBroker({
    registry: { embedder: "none" },
    http: options.http
      ? { port: 0, routes: (app) => mountOrchestratorApi(app, () => orchestrator) }
      : undefined,
    ...options.broker,
  });
  const templatesDir = join(t.dataDir, "templates");
  mkdirSync(templatesDir);
  for (const [file, yaml] of Object.entries(options.templates ?? {}))
    writeFileSync(join(templatesDir, file), yaml);
  const agents: Agent[] = [];
  const world: World = {
    broker: t.broker,
    testBroker: t,
    url: t.url,
    dataDir: t.dataDir,
    templatesDir,
    api: t.broker.http ? `http://127.0.0.1:${t.broker.http.port}` : "",
    template(file, yaml) {
      writeFileSync(join(templatesDir, file), yaml);
    },
    async startOrchestrator(extra = {}) {
      orchestrator = await Orchestrator.start({
        server: world.url,
        templates: templatesDir,
        directoryRefreshMs: 100,
        onError: () => {},
        ...extra,
      });
      world.orchestrator = orchestrator;
      return orchestrator;
    },
    async agent(manifest, handler, agentOptions) {
      const agent = new FunctionAgent(manifest, handler, { ...FAST_AGENT, ...agentOptions });
      agents.push(agent);
      await agent.start(world.url);
      return agent;
    },
    client: () => t.client(),
    async close() {
      await Promise.all(agents.map((a) => a.stop().catch(() => {})));
      await world.orchestrator?.close().catch(() => {});
      await t.close();
    },
  };
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
