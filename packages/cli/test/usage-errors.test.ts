// What the command line does with a bad command line, and with a reader that stops early.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { startBroker, type TestBroker } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli } from "./cli-harness.js";

const exec = promisify(execFile);
const HINT = "(see 'mq9 <command> --help')";

describe("an argument error says what is wrong and where to read more, then exits 2", () => {
  const cases: Array<{ args: string[]; error: RegExp }> = [
    { args: ["nosuch"], error: /^error: unknown command 'nosuch'/ },
    { args: ["sned", "a.b", "hi"], error: /^error: unknown command 'sned'\n?.*Did you mean send\?/s },
    { args: ["send"], error: /^error: missing required argument 'mailbox'/ },
    { args: ["mailbox", "nosuch"], error: /^error: unknown command 'nosuch'/ },
    {
      args: ["fetch", "a.b", "--deliver", "nope"],
      error: /^error: option '-d, --deliver <policy>' argument 'nope'/,
    },
    { args: ["send", "a.b", "hi", "--no-such-flag"], error: /^error: unknown option '--no-such-flag'/ },
  ];
  for (const { args, error } of cases) {
    it(`mq9 ${args.join(" ")}`, async () => {
      const result = await runCli(args);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(error);
      // The error and the hint, not the whole help.
      expect(result.stderr.trimEnd().split("\n").at(-1)).toBe(HINT);
      expect(result.stderr.trimEnd().split("\n").length, result.stderr).toBeLessThanOrEqual(3);
    });
  }

  it("a bare mq9 prints the help on stderr and exits 2; --help and help exit 0", async () => {
    const bare = await runCli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^Usage: mq9 \[options\] \[command\]/);
    for (const args of [["--help"], ["help", "send"], ["send", "--help"]]) {
      const help = await runCli(args);
      expect(help.code, args.join(" ")).toBe(0);
      expect(help.stdout).toMatch(/^Usage: mq9/);
    }
  });
});

describe("a reader that closes the pipe early ends the command quietly with 0", () => {
  let t: TestBroker;
  beforeAll(async () => {
    t = await startBroker({ registry: false });
    const client = await t.client();
    await client.createMailbox({ name: "pipe.inbox", ttlSeconds: 3600 });
    // Far more output than a pipe holds, so the writer is still writing when the reader goes.
    const payload = "x".repeat(1024);
    for (let i = 0; i < 1500; i++) await client.send("pipe.inbox", `${i} ${payload}`);
  }, 120_000);
  afterAll(() => t?.close());

  for (const args of [
    ["query", "pipe.inbox", "--json"],
    ["query", "pipe.inbox"],
  ]) {
    it(`mq9 ${args.join(" ")} | head -1`, async () => {
      const script = `"${process.execPath}" "${CLI}" ${args.join(" ")} --server ${t.url} | head -1; echo "exit \${PIPESTATUS[0]}" >&2`;
      const result = await exec("bash", ["-c", script]);
      expect(result.stdout.split("\n").filter(Boolean)).toHaveLength(1);
      expect(result.stderr.trim()).toBe("exit 0");
    });
  }
});
