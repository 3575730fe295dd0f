// The exit codes of docs/cli.md's table, for every command in each way it can fail: bad
// arguments 2, a broker error 1, no broker / refused credentials / no reply in time 3, over NATS
// and over HTTP alike.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { until } from "@mq9/testkit";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerVerbs } from "../src/commands/index.js";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { type CliResult, start } from "./cli-run.js";

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

const cards = tempDir();
const card = join(cards, "card.json");
writeFileSync(card, JSON.stringify({ name: "echo", description: "echoes", skills: [] }));
const cardYaml = join(cards, "card.yaml");
writeFileSync(cardYaml, "name: echo\ndescription: echoes\nskills: []\n");

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
  ["agent", "get", "--name", "echo"],
  ["agent", "import", card, "--mailbox", "agents.echo"],
  ["agent", "serve", "--card", cardYaml, "--exec", "cat"],
  ["mailbox", "ls"],
  ["mailbox", "info", "demo.inbox"],
  ["mailbox", "peek", "demo.inbox"],
  ["mailbox", "purge", "demo.inbox", "--yes"],
  ["mailbox", "rm", "demo.inbox", "--yes"],
  ["group", "ls", "demo.inbox"],
  ["group", "info", "demo.inbox", "workers"],
  ["group", "reset", "demo.inbox", "workers", "--earliest"],
  ["group", "release", "demo.inbox", "workers"],
  ["dlq", "ls", "demo.inbox"],
  ["dlq", "retry", "demo.inbox", "--all"],
  ["dlq", "purge", "demo.inbox", "--yes"],
  ["server", "info"],
];

/** Every command that uses the broker's HTTP API. */
const httpCommands = [
  ["agent", "list"],
  ["task", "list"],
  ["task", "show", "t1"],
  ["task", "run", "content-analysis", "--no-wait"],
  ["task", "cancel", "t1"],
  ["trace", "t1"],
  ["cluster", "status"],
  ["cluster", "forget", "n1"],
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
    // Another process on this busy machine may have taken the freed port since: only the kind of
    // failure is certain, not its reason.
    expectConnectionFailure(gone, some, /^mq9: cannot connect to .+\((NOT_CONNECTED|TIMEOUT)\)\n$/);
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
    expectConnectionFailure(gone, some, /^mq9: (cannot connect to|127\.0\.0\.1:\d+ )/);
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
    expect(gone.stderr).toMatch(/^mq9: cannot reach the broker's HTTP API at http:\/\/127\.0\.0\.1:\d+ \(/);
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

/** Every command a user can run, as its words (`agent get`): the leaves of the program's tree. */
async function everyCommand(): Promise<string[][]> {
  const program = new Command().name("mq9");
  await registerVerbs(program, []);
  const leaves = (command: Command, path: string[]): string[][] =>
    command.commands.length === 0
      ? [path]
      : command.commands.flatMap((sub) => leaves(sub, [...path, sub.name()]));
  return program.commands.flatMap((verb) => leaves(verb, [verb.name()]));
}

describe("exit 2: a bad command line, for every command", () => {
  it("an unknown option (or a missing required one): the error and one hint line", async () => {
    const commands = (await everyCommand()).map((c) => [...c, "--no-such-flag"]);
    expect(commands.length).toBeGreaterThan(25);
    const results = await runAll(commands, {});
    results.forEach((result, i) => {
      const what = `mq9 ${commands[i].join(" ")}\n${result.stderr}`;
      expect(result.code, what).toBe(2);
      expect(result.stderr, what).toMatch(
        /^error: (unknown option '--no-such-flag'|required option|missing required argument)/,
      );
      expect(result.stderr.trimEnd().split("\n").at(-1), what).toBe("(see 'mq9 <command> --help')");
    });
  }, 180_000);

  it("a bad value or a file that is not there", async () => {
    const cases = [
      ["send", "a.b", "hi", "--timeout", "soon"],
      ["fetch", "a.b", "--batch", "-1"],
      ["task", "list", "--http", "ftp://x"],
      ["task", "run", "t", "--payload", "{not json"],
      ["task", "run", "t", "--payload-file", join(cards, "nosuch.json")],
      ["agent", "serve", "--card", join(cards, "nosuch.yaml"), "--exec", "cat"],
      ["send", "a.b", "hi", "--nkey-seed", join(cards, "nosuch.nk")],
      ["send", "a.b", "hi", "--context", "nosuch"],
      ["context", "use", "nosuch"],
      ["models", "fetch", "nosuch"],
      ["serve", "--sync", "sometimes"],
    ];
    const results = await runAll(cases, { MQ9_SERVER: "mq9://127.0.0.1:1" });
    results.forEach((result, i) => {
      const what = `mq9 ${cases[i].join(" ")}\n${result.stderr}`;
      expect(result.code, what).toBe(2);
      expect(result.stderr, what).not.toMatch(/\n\s+at /);
    });
  }, 120_000);
});

describe("against a broker with a token: refused credentials 3, broker errors 1", () => {
  const TOKEN = "exit-code-token";
  let broker: ServeProcess;
  let server: string;
  beforeAll(async () => {
    const dir = tempDir();
    const templates = join(dir, "templates");
    mkdirSync(templates);
    // A task whose step no agent can do: it waits, for the Ctrl-C test.
    writeFileSync(
      join(templates, "waits.yaml"),
      "task_type: waits\ntimeout: 10m\nsteps:\n  - id: work\n    capability: nobody.does.this\n    timeout: 10m\n",
    );
    broker = await spawnServe(["--data", join(dir, "data"), "--templates", templates], { MQ9_TOKEN: TOKEN });
    server = `mq9://127.0.0.1:${broker.port}`;
  }, 120_000);
  afterAll(async () => {
    broker?.child.kill("SIGTERM");
    await broker?.exited;
  });

  it("no token, or a wrong one: exit 3 with one line, over NATS and over HTTP alike", async () => {
    const commands = [...natsCommands, ...httpCommands, ["mcp"]];
    for (const token of [undefined, "not-it"]) {
      const results = await runAll(commands, { MQ9_SERVER: server, MQ9_TOKEN: token });
      // A guesser is slowed: after a few refusals the broker answers "too many" at once.
      expectConnectionFailure(
        results,
        commands,
        /^mq9: .*(refused the credentials|wants credentials|too many failed authentications).*\n$/,
      );
    }
  }, 180_000);

  it("an error answer of the broker: exit 1, over NATS and over HTTP alike", async () => {
    const commands = [
      ["mailbox", "create", "Bad..Name"],
      ["send", "no.such.box", "hi"],
      ["fetch", "no.such.box"],
      ["ack", "no.such.box", "1", "--group", "g"],
      ["query", "no.such.box"],
      ["delete", "no.such.box", "1"],
      ["consume", "no.such.box", "--count", "1"],
      ["mailbox", "info", "no.such.box"],
      ["mailbox", "peek", "no.such.box"],
      ["mailbox", "purge", "no.such.box", "--yes"],
      ["mailbox", "rm", "no.such.box", "--yes"],
      ["group", "ls", "no.such.box"],
      ["group", "info", "no.such.box", "g"],
      ["group", "reset", "no.such.box", "g", "--earliest"],
      ["group", "release", "no.such.box", "g"],
      ["dlq", "ls", "no.such.box"],
      ["dlq", "retry", "no.such.box", "--all"],
      ["dlq", "purge", "no.such.box", "--yes"],
      ["agent", "register", "--name", "echo", "--mailbox", "Bad..box"],
      ["agent", "report", "--name", "nosuch"],
      ["agent", "get", "--name", "nosuch"],
      ["agent", "import", card, "--mailbox", "Bad..box"],
      ["agent", "serve", "--card", cardYaml, "--exec", "cat", "--mailbox", "Bad..box"],
      ["task", "run", "no-such-template"],
      ["task", "show", "nosuch"],
      ["task", "cancel", "nosuch"],
      ["task", "list", "--status", "bogus"],
      ["trace", "nosuch"],
      ["cluster", "forget", "n1"],
      ["templates", "check", join(cards, "no-such-folder")],
    ];
    const results = await runAll(commands, { MQ9_SERVER: server, MQ9_TOKEN: TOKEN });
    results.forEach((result, i) => {
      const what = `mq9 ${commands[i].join(" ")}\n${result.stderr}`;
      expect(result.code, what).toBe(1);
      expect(result.stderr.trimEnd().split("\n"), what).toHaveLength(1);
    });
  }, 180_000);

  it("mq9 mcp with a broker that is not up yet is no error: it connects on the first tool call", async () => {
    const result = await runCli(["mcp", "--server", "mq9://127.0.0.1:1"]);
    expect(result.code, result.stderr).toBe(0);
  });

  it("Ctrl-C on mq9 task run: the task keeps running, and the command says how to follow it; exit 130", async () => {
    const run = start(["task", "run", "waits", "--server", server, "--token", TOKEN]);
    await until("task run to say the task started", () => run.stdout().includes(" started\n"));
    const taskId = /^task (\S+) \(waits\) started$/m.exec(run.stdout())?.[1] ?? "";
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(130);
    expect(run.stderr()).toMatch(
      new RegExp(
        `^mq9: task ${taskId} is still running \\(Ctrl-C stopped following it, not the task\\); follow it with: mq9 task show ${taskId}, or mq9 trace \\S+; stop it with: mq9 task cancel ${taskId}\\n$`,
      ),
    );
    const shown = await runCli(["task", "show", taskId, "--json", "--server", server, "--token", TOKEN]);
    expect(JSON.parse(shown.stdout).status).toMatch(/^(pending|dispatching|running)$/);
    const canceled = await runCli(["task", "cancel", taskId, "--server", server, "--token", TOKEN]);
    expect(canceled.code, canceled.stderr).toBe(0);
  }, 60_000);
});

describe("mq9 serve on a busy port", () => {
  let holder: { server: Server; port: number };
  beforeAll(async () => {
    holder = await tcpServer(() => {});
  });
  afterAll(() => holder.server.close());

  for (const flag of ["--port", "--http-port"]) {
    it(`${flag}: one line that says so, no stack, exit 1`, async () => {
      const other = flag === "--port" ? "--http-port" : "--port";
      const result = await runCli([
        "serve",
        "--data",
        join(tempDir(), "data"),
        flag,
        String(holder.port),
        other,
        "0",
      ]);
      expect(result.code, result.stderr).toBe(1);
      // Neither stream carries the listener's error log with its stack (the logs go to stdout).
      expect(result.stdout).not.toMatch(/EADDRINUSE|\n\s+at /);
      expect(result.stderr).toBe(
        `mq9: port ${holder.port} on 127.0.0.1 is already in use; stop the other process or pass ${flag}\n`,
      );
    }, 60_000);
  }
});
