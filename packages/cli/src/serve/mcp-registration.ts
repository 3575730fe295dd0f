import { hostname } from "node:os";
import type { Logger, Registry } from "@mq9/broker";
import type { McpServerRegistration } from "@mq9/client";
import { Mq9Error } from "@mq9/client";
import { SERVER_INFO, TOOLS } from "@mq9/mcp";

/**
 * Seconds the registration of this process's MCP endpoint lives without a heartbeat: a broker
 * killed without its shutdown, or restarted on another port, leaves a stale entry this long.
 */
export const OWN_MCP_TTL_S = 60;
/** A heartbeat every third of the ttl, so that one lost heartbeat does not expire it. */
const HEARTBEAT_MS = (OWN_MCP_TTL_S * 1000) / 3;
/**
 * How long start and shutdown wait for their REGISTER and UNREGISTER: neither may hold the broker
 * up should its database be slow (the REGISTER goes on in the background; a registration left
 * behind expires with its ttl).
 */
const WAIT_MS = 2_000;

/** Resolves when `work` settles or after `ms`, whichever is first; never rejects. */
function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  return Promise.race([
    work.then(
      () => {},
      () => {},
    ),
    late,
  ]).finally(() => clearTimeout(timer));
}

/** The URL another host reaches this process's MCP endpoint at: a wildcard bind by the machine's name. */
export function ownMcpUrl(httpHost: string, httpPort: number, nodeHttpUrl?: string): string {
  if (nodeHttpUrl !== undefined) return `${nodeHttpUrl.replace(/\/$/, "")}/mcp`;
  const name = ["", "0.0.0.0", "::", "[::]"].includes(httpHost) ? hostname() : httpHost;
  const host = name.includes(":") && !name.startsWith("[") ? `[${name}]` : name;
  return `http://${host}:${httpPort}/mcp`;
}

/** The registration of mq9's own MCP endpoint: its server card lists the tools it serves. */
export function ownMcpRegistration(url: string): McpServerRegistration {
  return {
    kind: "mcp-server",
    url,
    name: SERVER_INFO.name,
    description:
      "mq9's MCP tools: mailboxes, messages, the agent registry and A2A calls to registered agents",
    tags: ["mq9", "mailboxes", "agents"],
    ttl: OWN_MCP_TTL_S,
    server_card: {
      name: SERVER_INFO.name,
      version: SERVER_INFO.version,
      description: "An mq9 broker's MCP endpoint (Streamable HTTP)",
      remotes: [{ type: "streamable-http", url }],
      tools: TOOLS.map(({ name, title, description }) => ({ name, title, description })),
    },
  };
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/**
 * Keeps this process's MCP endpoint registered as an MCP server while it runs: registered at
 * start, renewed by heartbeats (registered again should it have expired or been removed), and
 * unregistered at shutdown. It asks the broker's registry in-process, as the broker itself (an
 * admin's registration when users are configured), so no NATS permission or other node is in
 * the way. Failures are logged; they never stop the broker.
 */
export class OwnMcpRegistration {
  private timer: NodeJS.Timeout | undefined;
  private readonly body: McpServerRegistration;

  constructor(
    private readonly registry: Registry,
    url: string,
    private readonly logger: Logger,
  ) {
    this.body = ownMcpRegistration(url);
  }

  get url(): string {
    return this.body.url;
  }

  /** Registers now; resolves once the first REGISTER is answered (or failed and was logged), or after WAIT_MS. */
  async start(): Promise<void> {
    await within(this.register(), WAIT_MS);
    this.timer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  private async register(): Promise<void> {
    try {
      await this.registry.register(json(this.body));
      this.logger.debug({ url: this.body.url }, "registered this broker's MCP endpoint as an MCP server");
    } catch (err) {
      this.logger.warn({ err }, `could not register this broker's MCP endpoint: ${(err as Error).message}`);
    }
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.registry.report(json({ url: this.body.url }));
    } catch (err) {
      // Expired (a long pause) or removed by hand: it is this process's, so it comes back.
      if (err instanceof Mq9Error && err.code === "AGENT_NOT_FOUND") await this.register();
      else this.logger.warn({ err }, `MCP endpoint heartbeat failed: ${(err as Error).message}`);
    }
  }

  /** Stops the heartbeats and removes the registration (best effort: a dead one expires with its ttl). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const gone = this.registry.unregister(json({ url: this.body.url }));
    gone.catch((err) =>
      this.logger.debug({ err }, "could not unregister this broker's MCP endpoint; it expires with its ttl"),
    );
    await within(gone, WAIT_MS);
  }
}
