// Saved contexts (`mq9 context …`): what they store, and which value a command uses when flags,
// the environment and contexts all name one.
import { readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { jsonLines } from "./cli-run.js";

const TOKEN = "context-test-token";

/** A fresh config folder, and a runner whose commands use it and name no broker in the environment. */
function configHome(): {
  dir: string;
  mq9: (args: string[], env?: NodeJS.ProcessEnv) => ReturnType<typeof runCli>;
} {
  const dir = tempDir("mq9-contexts-");
  return {
    dir,
    mq9: (args, env = {}) =>
      runCli(args, {
        MQ9_CONFIG_HOME: dir,
        MQ9_SERVER: undefined,
        MQ9_TOKEN: undefined,
        MQ9_HTTP: undefined,
        MQ9_CONTEXT: undefined,
        ...env,
      }),
  };
}

describe("mq9 context add|use|ls|show|rm", () => {
  it("saves contexts in files only their owner reads, and never prints a secret", async () => {
    const { dir, mq9 } = configHome();
    const empty = await mq9(["context", "ls"]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/^\(no contexts/);

    const local = await mq9([
      "context",
      "add",
      "local",
      "--server",
      "mq9://127.0.0.1:4332",
      "--description",
      "laptop",
    ]);
    expect(local.code, local.stderr).toBe(0);
    // The first context saved is selected.
    expect(local.stdout).toContain("using context local");
    const prod = await mq9([
      "context",
      "add",
      "prod",
      "--server",
      "mq9s://mq9.example.com",
      "--token",
      "s3cret",
      "--http",
      "https://mq9.example.com",
    ]);
    expect(prod.code, prod.stderr).toBe(0);
    expect(prod.stdout).not.toContain("using");

    const file = join(dir, "contexts", "prod.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      server: "mq9s://mq9.example.com",
      token: "s3cret",
      http: "https://mq9.example.com",
    });

    const table = await mq9(["context", "ls"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+SERVER\s+HTTP\s+AUTH\s+DESCRIPTION$/);
    expect(table.stdout).toMatch(/^local \*\s+mq9:\/\/127\.0\.0\.1:4332\s+-\s+-\s+laptop$/m);
    expect(table.stdout).toMatch(
      /^prod\s+mq9s:\/\/mq9\.example\.com\s+https:\/\/mq9\.example\.com\s+token$/m,
    );

    const used = await mq9(["context", "use", "prod"]);
    expect(used.stdout).toBe("using context prod (mq9s://mq9.example.com)\n");
    const listed = jsonLines((await mq9(["context", "ls", "--json"])).stdout);
    expect(listed.map((c) => [c.name, c.selected, c.auth])).toEqual([
      ["local", false, "-"],
      ["prod", true, "token"],
    ]);
    const shown = await mq9(["context", "show"]);
    expect(shown.stdout).toMatch(/^name:\s+prod \(selected\)$/m);
    expect(shown.stdout).toMatch(/^auth:\s+token$/m);
    for (const output of [table.stdout, shown.stdout, JSON.stringify(listed)]) {
      expect(output).not.toContain("s3cret");
    }

    const removed = await mq9(["context", "rm", "prod"]);
    expect(removed.code).toBe(0);
    // Removing the selected context removes the selection: nothing points at a missing file.
    const none = await mq9(["context", "show"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^mq9: no context is selected/);
  });

  it("bad input is a usage error (exit 2) that changes nothing", async () => {
    const { dir, mq9 } = configHome();
    const seed = join(dir, "user.nk");
    const cases: Array<{ args: string[]; error: RegExp }> = [
      { args: ["add", "../x", "--server", "mq9://h"], error: /is not a context name/ },
      { args: ["add", "x"], error: /required option '-s, --server <url>'/ },
      { args: ["add", "x", "--server", "ftp://h"], error: /^mq9: --server: / },
      { args: ["add", "x", "--server", "mq9://h", "--token", "t", "--user", "u"], error: /give one of/ },
      { args: ["add", "x", "--server", "mq9://h", "--password", "p"], error: /--password goes with --user/ },
      { args: ["add", "x", "--server", "mq9://h", "--nkey-seed", seed], error: /--nkey-seed: no such file/ },
      { args: ["add", "x", "--server", "mq9://h", "--http", "h:1"], error: /must be an http/ },
      { args: ["use", "nope"], error: /context 'nope' does not exist \(there are none\)/ },
      { args: ["show", "nope"], error: /context 'nope' does not exist/ },
      { args: ["rm", "nope"], error: /context 'nope' does not exist/ },
    ];
    for (const { args, error } of cases) {
      const result = await mq9(["context", ...args]);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(error);
    }
    expect((await mq9(["context", "ls", "--json"])).stdout).toBe("");

    await mq9(["context", "add", "x", "--server", "mq9://a"]);
    const again = await mq9(["context", "add", "x", "--server", "mq9://b"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists: pass --force/);
    const forced = await mq9(["context", "add", "x", "--server", "mq9://b", "--force"]);
    expect(forced.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "contexts", "x.json"), "utf8")).server).toBe("mq9://b");
  });
});

describe("commands take their broker and credentials from a context", () => {
  let broker: ServeProcess;
  let server: string;
  beforeAll(async () => {
    broker = await spawnServe(["--data", join(tempDir(), "data")], { MQ9_TOKEN: TOKEN });
    server = `mq9://127.0.0.1:${broker.port}`;
  }, 120_000);
  afterAll(async () => {
    broker?.child.kill("SIGTERM");
    await broker?.exited;
  });

  /** A config folder with `good` (this broker, its token), `wrong` (a wrong token) and `nowhere` selected. */
  async function contexts() {
    const home = configHome();
    const add = async (args: string[]) => expect((await home.mq9(["context", "add", ...args])).code).toBe(0);
    await add(["good", "--server", server, "--token", TOKEN]);
    await add(["wrong", "--server", server, "--token", "not-it"]);
    await add(["nowhere", "--server", "mq9://127.0.0.1:1", "--select"]);
    return home;
  }

  it("the selected context, over NATS and over HTTP; --verbose says so", async () => {
    const { mq9 } = await contexts();
    expect((await mq9(["context", "use", "good"])).code).toBe(0);
    const created = await mq9(["mailbox", "create", "ctx.inbox", "--verbose"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe(`mq9: broker ${server} (context 'good')\n`);
    const listed = await mq9(["task", "list", "--verbose"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).toContain(`from the INFO of the broker at ${server} (context 'good')`);
  });

  it("precedence: flag > env > --context / MQ9_CONTEXT > the selected context > the default", async () => {
    const { mq9 } = await contexts();
    // `nowhere` is selected: --context and MQ9_CONTEXT beat it.
    expect((await mq9(["send", "ctx.inbox", "a", "--context", "good"])).code).toBe(0);
    expect((await mq9(["task", "list", "--context", "good"])).code).toBe(0);
    expect((await mq9(["send", "ctx.inbox", "b"], { MQ9_CONTEXT: "good" })).code).toBe(0);
    // The environment beats a named context, a flag beats the environment.
    const envToken = await mq9(["send", "ctx.inbox", "c", "--context", "good"], { MQ9_TOKEN: "not-it" });
    expect(envToken.code).toBe(3);
    expect(envToken.stderr).toMatch(/refused the credentials/);
    const flagToken = await mq9(["send", "ctx.inbox", "d", "--context", "wrong", "--token", TOKEN], {
      MQ9_TOKEN: "not-it",
    });
    expect(flagToken.code, flagToken.stderr).toBe(0);
    const envServer = await mq9(["send", "ctx.inbox", "e", "--context", "nowhere", "--verbose"], {
      MQ9_SERVER: server,
      MQ9_TOKEN: TOKEN,
    });
    expect(envServer.code, envServer.stderr).toBe(0);
    expect(envServer.stderr).toBe(`mq9: broker ${server} (MQ9_SERVER)\n`);
    // The selected context's token is not sent to a server it does not name.
    expect((await mq9(["context", "use", "good"])).code).toBe(0);
    const elsewhere = await mq9(["send", "ctx.inbox", "f", "--server", server]);
    expect(elsewhere.code).toBe(3);
    const elsewhereHttp = await mq9(["task", "list", "--http", `http://127.0.0.1:${broker.httpPort}`]);
    expect(elsewhereHttp.code).toBe(3);
    expect(elsewhereHttp.stderr).toMatch(/wants credentials/);
    // Without any context, the default.
    const { mq9: bare } = configHome();
    const fallback = await bare(["send", "ctx.inbox", "g", "--verbose", "--timeout", "1000"]);
    expect(fallback.stderr.split("\n")[0]).toBe("mq9: broker mq9://127.0.0.1:4332 (the default)");
  });

  it("an unknown context, or a context naming a file that is gone, is exit 2 with one line", async () => {
    const { dir, mq9 } = await contexts();
    const seed = join(dir, "seed.nk");
    writeFileSync(seed, "SUAM7BRXJJVTGOMXMWLDRJSJS3QJ7VRP6KOBLJGNXOLVMCOSAXYBXSALO4\n");
    expect((await mq9(["context", "add", "nkey", "--server", server, "--nkey-seed", seed])).code).toBe(0);
    unlinkSync(seed);
    const runs = [
      {
        args: ["send", "ctx.inbox", "x", "--context", "nope"],
        env: {},
        error: /^mq9: context 'nope' does not exist/,
      },
      { args: ["task", "list", "--context", "nope"], env: {}, error: /^mq9: context 'nope' does not exist/ },
      {
        args: ["query", "ctx.inbox"],
        env: { MQ9_CONTEXT: "nope" },
        error: /^mq9: MQ9_CONTEXT: context 'nope'/,
      },
      {
        args: ["send", "ctx.inbox", "x", "--context", "nkey"],
        env: {},
        error: /^mq9: --nkey-seed: cannot read /,
      },
    ];
    for (const { args, env, error } of runs) {
      const result = await mq9(args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(error);
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
    // A selection whose file was removed by hand.
    unlinkSync(join(dir, "contexts", "nowhere.json"));
    const gone = await mq9(["fetch", "ctx.inbox", "--json"]);
    expect(gone.code).toBe(2);
    expect(JSON.parse(gone.stderr)).toMatchObject({ code: "USAGE" });
    expect(JSON.parse(gone.stderr).error).toMatch(
      /^the selected context 'nowhere' \(.*context\.txt\) does not exist/,
    );
  });
});
