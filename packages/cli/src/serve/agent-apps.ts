import { readFileSync } from "node:fs";
import { type ConnectOptions, connect, type Mq9Client } from "@mq9/client";
import { mountA2AGateway } from "@mq9/gateway";
import { mountMcp, SharedToolContext } from "@mq9/mcp";
import type { FastifyInstance } from "fastify";
import type { ServeConfig } from "./config.js";

/**
 * The agent-facing apps of a `mq9 serve` process on its HTTP port: the MCP endpoint
 * (/mcp) and the A2A gateway (/a2a/{agent}). Both talk to this broker like any client,
 * over one connection opened on first use (after `start` has told them where it is).
 */
export class ServeAgentApps {
  private url: string | undefined;
  private client: Promise<Mq9Client> | undefined;
  private readonly tools = new SharedToolContext(() => this.connection());

  constructor(private readonly config: ServeConfig) {}

  routes = async (app: FastifyInstance): Promise<void> => {
    await mountMcp(app, { context: () => this.tools.get() });
    await mountA2AGateway(app, { client: () => this.connection() });
  };

  /** Where the broker listens; the apps connect there on first use. */
  start(host: string, port: number): void {
    const local = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
    this.url = `${this.config.tls.cert ? "mq9s" : "mq9"}://${local}:${port}`;
  }

  async close(): Promise<void> {
    await this.tools.close();
    const client = await this.client?.catch(() => undefined);
    await client?.close();
  }

  private connection(): Promise<Mq9Client> {
    if (!this.url) return Promise.reject(new Error("the broker is still starting; try again"));
    const { auth, tls } = this.config;
    const options: ConnectOptions = { name: "mq9-http-apps" };
    if (auth.token) options.token = auth.token;
    if (auth.user) {
      options.user = auth.user;
      options.password = auth.password ?? "";
    }
    if (tls.cert) options.tls = { ca: readFileSync(tls.ca ?? tls.cert, "utf8") };
    this.client ??= connect(this.url, options).catch((err) => {
      this.client = undefined;
      throw err;
    });
    return this.client;
  }
}
