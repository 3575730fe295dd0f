import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP pass-through between a client and a broker, so a test can cut every
 * connection (as a network failure would) and count what the client sent.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private sentText = "";

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free port and forwards each connection to 127.0.0.1:`targetPort`. */
  static async start(targetPort: number): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = createServer((client) => {
      const upstream = createConnection({ host: "127.0.0.1", port: targetPort });
      for (const socket of [client, upstream]) {
        proxy.sockets.add(socket);
        socket.on("close", () => proxy.sockets.delete(socket));
        socket.on("error", () => {});
      }
      client.on("data", (chunk: Buffer) => {
        proxy.sentText += chunk.toString("latin1");
        upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  /** `nats://127.0.0.1:<port>` */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Drops every open connection at once; new ones are still accepted. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Everything the clients sent so far (NATS protocol text; payload bytes as latin1). */
  get sent(): string {
    return this.sentText;
  }

  /** How many connections the clients opened and greeted (CONNECT lines seen). */
  get connects(): number {
    return this.sentText.split("CONNECT {").length - 1;
  }

  /** How many times the clients sent a publish to a subject starting with `prefix`. */
  count(prefix: string): number {
    return this.sentText.split(` ${prefix}`).length - 1;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
