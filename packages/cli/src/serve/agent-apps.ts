import type { Logger, Registry } from "@mq9/broker";
import { connect, type Mq9Client } from "@mq9/client";
import { mountA2AGateway } from "@mq9/gateway";
import { mountMcp, SharedToolContext } from "@mq9/mcp";
import type { FastifyInstance } from "fastify";
import { type AppConnection, appConnection } from "./app-connection.js";
import type { ServeConfig } from "./config.js";
import { OwnMcpRegistration } from "./mcp-registration.js";

/**
 * The agent-facing apps of a `mq9 serve` process on its HTTP port: the MCP endpoint
 * (/mcp) and the A2A gateway (/a2a/{agent}). Both talk to this broker like any client,
 * over one connection opened on first use (after `start` has told them where it is).
 */
export class ServeAgentApps {
  private target: AppConnection | undefined;
  private client: Promise<Mq9Client> | undefined;
  private readonly tools = new SharedToolContext(() => this.connection());
  private ownMcp: OwnMcpRegistration | undefined;

  constructor(private readonly config: ServeConfig) {}

  routes = async (app: FastifyInstance): Promise<void> => {
    await mountMcp(app, { context: () => this.tools.get() });
    await mountA2AGateway(app, { client: () => this.connection() });
  };

  /** Where the broker listens (in cluster mode: the NATS cluster); the apps connect there on first use. */
  start(host: string, port: number): void {
    this.target = appConnection(this.config, host, port, "mq9-http-apps");
  }

  /**
   * Registers the MCP endpoint these apps serve (at `url`) as an MCP server resource, kept alive
   * by heartbeats until close(); resolves once the first REGISTER is answered.
   */
  async registerMcp(registry: Registry, url: string, logger: Logger): Promise<void> {
    this.ownMcp = new OwnMcpRegistration(registry, url, logger);
    await this.ownMcp.start();
  }

  async close(): Promise<void> {
    await this.ownMcp?.close();
    await this.tools.close();
    const client = await this.client?.catch(() => undefined);
    await client?.close();
  }

  private connection(): Promise<Mq9Client> {
    const target = this.target;
    if (!target) return Promise.reject(new Error("the broker is still starting; try again"));
    this.client ??= connect(target.server, target.options).catch((err) => {
      this.client = undefined;
      throw err;
    });
    return this.client;
  }
}
