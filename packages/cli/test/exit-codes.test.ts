import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir } from "./cli-harness.js";
import type { CliResult } from "./cli-run.js";

/** A TCP server that does what `onSocket` says with every connection; resolves with its port. */
async function tcpServer(onSocket: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** Runs the commands at most `width` at a time (each is a Node process on a shared machine). */
async function runAll(commands: string[][], env: NodeJS.ProcessEnv, width = 4): Promise<CliResult[]> {
  const results: CliResult[] = [];
  let next = 0;
  const lane = async () => {
    while (next < commands.length) {
      const i = next++;
      results[i] = await runCli(commands[i], env);
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  return results;
}

const card = join(tempDir(), "card.json");
writeFileSync(card, JSON.stringify({ name: "echo", description: "echoes", skills: [] }));

/** Every command that talks to the broker over NATS, with the arguments it needs. */
const natsCommands = [
  ["mailbox", "create", "demo.inbox"],
  ["send", "demo.inbox", "hello"],
  ["fetch", "demo.inbox"],
  ["ack", "demo.inbox", "1", "--group", "workers"],
  ["query", "demo.inbox"],
  ["delete", "demo.inbox", "1"],
  ["consume", "demo.inbox", "--count", "1"],
  ["agent", "register", "--name", "echo", "--mailbox", "agents.echo"],
  ["agent", "unregister", "--name", "echo"],
  ["agent", "report", "--name", "echo"],
  ["agent", "discover"],
  ["agent", "import", card, "--mailbox", "agents.echo"],
];

/** Every command that uses the broker's HTTP API. */
const httpCommands = [
  ["agent", "list"],
  ["task", "list"],
  ["task", "show", "t1"],
  ["task", "run", "content-analysis", "--no-wait"],
  ["task", "cancel", "t1"],
  ["trace", "t1"],
];

function expectConnectionFailure(results: CliResult[], commands: string[][], pattern: RegExp): void {
  results.forEach((result, i) => {
    const what = `mq9 ${commands[i].join(" ")}\n${result.stderr}`;
    expect(result.code, what).toBe(3);
    expect(result.stdout, what).toBe("");
    // One line that says what went wrong, not a stack trace.
    expect(result.stderr, what).toMatch(pattern);
    expect(result.stderr.trimEnd().split("\n"), what).toHaveLength(1);
  });
}

describe("every command exits with its documented code when the broker is not there", () => {
  const sockets: Socket[] = [];
  let silent: { server: Server; port: number };
  let talker: { server: Server; port: number };
  let closedPort: number;

  beforeAll(async () => {
    // Accepts and says nothing, as an HTTP port does to a NATS client.
    silent = await tcpServer((socket) => {
      sockets.push(socket);
      socket.on("error", () => {});
    });
    // Answers, but not in NATS.
    talker = await tcpServer((socket) => {
      sockets.push(socket);
      socket.on("error", () => {});
      socket.write("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
    });
    const gone = await tcpServer(() => {});
    closedPort = gone.port;
    await new Promise((resolve) => gone.server.close(resolve));
  });
  afterAll(() => {
    for (const socket of sockets) socket.destroy();
    silent.server.close();
    talker.server.close();
  });

  it("a port that accepts and never speaks NATS (an HTTP port): exit 3 after the timeout", async () => {
    const server = `mq9://127.0.0.1:${silent.port}`;
    const commands = natsCommands.map((c) => [...c, "--timeout", "1000"]);
    const results = await runAll(commands, { MQ9_SERVER: server });
    expectConnectionFailure(
      results,
      commands,
      /^mq9: cannot connect to .+: no NATS INFO within 1000 ms; .*not its HTTP port.*\(TIMEOUT\)\n$/,
    );
  }, 120_000);

  it("a port that answers something other than NATS, or nothing listening: exit 3", async () => {
    // One command of each kind of connection (one-shot, long-running consume, registry).
    const some = [natsCommands[1], natsCommands[6], natsCommands[10]];
    const talked = await runAll(some, { MQ9_SERVER: `127.0.0.1:${talker.port}` });
    expectConnectionFailure(talked, some, /^mq9: cannot connect to .+\(NOT_CONNECTED\)\n$/);
    const gone = await runAll(some, { MQ9_SERVER: `127.0.0.1:${closedPort}` });
    expectConnectionFailure(gone, some, /^mq9: cannot connect to .+: connection refused; .+\n$/);
  }, 120_000);

  it("HTTP API commands: --server at a port that is not a broker: exit 3", async () => {
    const results = await runAll(httpCommands, { MQ9_SERVER: `127.0.0.1:${silent.port}` });
    expectConnectionFailure(results, httpCommands, /^mq9: 127\.0\.0\.1:\d+ sent no NATS INFO within/);
  }, 120_000);

  it("HTTP API commands: --server at something that is not NATS, or nothing there: exit 3", async () => {
    const some = [httpCommands[0], httpCommands[3]];
    const talked = await runAll(some, { MQ9_SERVER: `127.0.0.1:${talker.port}` });
    expectConnectionFailure(
      talked,
      some,
      /^mq9: 127\.0\.0\.1:\d+ is not an mq9 broker: it answered 'HTTP\/1\.1 400 Bad Request'/,
    );
    const gone = await runAll(some, { MQ9_SERVER: `127.0.0.1:${closedPort}` });
    expectConnectionFailure(gone, some, /^mq9: cannot connect to .+: connection refused/);
  }, 120_000);

  it("HTTP API commands: --http at something that is not the broker's HTTP server: exit 3", async () => {
    const [talked, gone] = await Promise.all([
      runCli(["task", "list", "--http", `http://127.0.0.1:${silent.port}`, "--json"], {
        MQ9_SERVER: "",
      }),
      runCli(["agent", "list", "--http", `http://127.0.0.1:${closedPort}`]),
    ]);
    expect(talked.code, talked.stderr).toBe(3);
    expect(JSON.parse(talked.stderr)).toMatchObject({ code: "TIMEOUT" });
    expect(JSON.parse(talked.stderr).error).toMatch(/no answer within \d+ ms/);
    expect(gone.code, gone.stderr).toBe(3);
    expect(gone.stderr).toMatch(
      /^mq9: cannot reach the broker's HTTP API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
  }, 60_000);

  it("a --http that is not a URL is a usage error: exit 2", async () => {
    const result = await runCli(["task", "list", "--http", "not a url"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("mq9: --http 'not a url' is not a URL like http://127.0.0.1:8332\n");
  });
});

describe("mq9 --version", () => {
  it("prints the version of the CLI's package.json", async () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    for (const flag of ["--version", "-V"]) {
      const result = await runCli([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${manifest.version}\n`);
    }
  });
});
