import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type Mq9Client } from "@mq9/client";
import { A2AAgent, A2AClient } from "@mq9/client/a2a";
import { ensurePythonEnv, skipWithoutPython, TranslatorExecutor, translatorCard, VENV } from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type JsonLines, type Mq9Serve, mq9OnPath, mq9Serve, python, REPO, tempHome } from "./harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tool results are JSON read field by field
type Json = Record<string, any>;

const coderCard = JSON.stringify({
  description: "Writes Python programs and scripts from a plain-language description",
  skills: [
    {
      id: "python",
      name: "Write Python",
      description: "Writes Python code on request",
      tags: ["python", "code"],
    },
  ],
});

describe.skipIf(skipWithoutPython())("the native Hermes plugin, loaded by the real hermes-agent", () => {
  let py: string;
  let broker: Mq9Serve;
  let client: Mq9Client;
  const running: JsonLines[] = [];
  const { env } = mq9OnPath();
  const start = (command: string, args: string[]) => {
    const child = python(py, "hermes_agent_harness.py", [command, "--home", tempHome(), ...args], env);
    running.push(child);
    return child;
  };

  beforeAll(async () => {
    py = await ensurePythonEnv();
    broker = await mq9Serve(env);
    client = await connect(broker.url);
  }, 900_000);

  afterAll(async () => {
    await Promise.all(running.map((p) => p.close()));
    await client?.close();
    await broker?.close();
  });

  it("Hermes' loader loads it from the plugins folder; its tools, dispatched by Hermes, reach the broker", async () => {
    const run = start("load", ["--server", broker.url, "--agent-id", "hermes.loader"]);
    const loaded = await run.step("loaded");
    expect(loaded.plugin).toMatchObject({ name: "mq9", enabled: true, error: null, tools: 6, hooks: 3 });
    expect(loaded.tools).toEqual([
      "mq9_call",
      "mq9_discover",
      "mq9_register",
      "mq9_status",
      "mq9_task",
      "mq9_unregister",
    ]);
    expect(new Set(Object.values(loaded.toolsets as Json))).toEqual(new Set(["mq9"]));
    await run.step("finalized");
    const results = run.lines.filter((l) => l.step === "dispatch").map((l) => l.result as Json);
    const [status, found, byTag, registered, foundAgain, call, task, unregistered, gone] = results;
    expect(status).toMatchObject({
      connected: true,
      registered: true,
      serving: true,
      mailbox: "hermes.loader",
    });
    // The card is derived from the enabled toolsets, with the mailbox interface first.
    expect(status.agent_card.supportedInterfaces[0]).toEqual({
      url: `mq9://127.0.0.1:${broker.port}/hermes.loader`,
      protocolBinding: "urn:mq9:a2a:mailbox:v1",
      protocolVersion: "1.0",
    });
    expect(status.agent_card.skills.length).toBeGreaterThan(0);
    expect(found.agents.map((a: Json) => a.mailbox)).toContain("hermes.loader");
    // Hermes' default CLI toolsets include browser: a skill of the card, found by its tag.
    expect(byTag.agents.map((a: Json) => a.mailbox)).toEqual(["hermes.loader"]);
    expect(registered.agent_card.description).toBe("re-registered by the test");
    expect(foundAgain.agents[0]).toMatchObject({
      mailbox: "hermes.loader",
      payload: "re-registered by the test",
    });
    expect(call.error).toMatch(/mailbox hermes\.loader\.nobody does not exist/);
    expect(task.error).toMatch(/no call with id unknown/);
    expect(unregistered).toEqual({ unregistered: true, mailbox: "hermes.loader" });
    expect(gone.agents).toEqual([]);
    expect(await run.exited).toBe(0);
    // The session's end stops its inbox server and reply reader: nothing left half-run.
    expect(run.stderr).not.toContain("Task was destroyed");
  }, 120_000);

  it("without a broker configured it loads, registers nothing and says nothing", async () => {
    const run = start("load", ["--agent-id", "hermes.quiet"]);
    const loaded = await run.step("loaded");
    expect(loaded.plugin).toMatchObject({ name: "mq9", enabled: true, error: null, tools: 0, hooks: 0 });
    expect(loaded.tools).toEqual([]);
    expect(await run.exited).toBe(0);
    expect(run.stderr).not.toMatch(/mq9/i);
  }, 120_000);

  it("configured by env alone (MQ9_SERVER, MQ9_TOKEN, MQ9_AGENT_ID); a broker with a token refuses it without one", async () => {
    const guarded = await mq9Serve(env, ["--token", "s3cret"]);
    try {
      const withToken = python(
        py,
        "hermes_agent_harness.py",
        ["load", "--home", tempHome(), "--env-config"],
        {
          ...env,
          MQ9_SERVER: guarded.url,
          MQ9_TOKEN: "s3cret",
          MQ9_AGENT_ID: "Env Agent",
          MQ9_CAPABILITIES: "python, code",
        },
      );
      running.push(withToken);
      await withToken.step("finalized");
      const [status] = withToken.lines.filter((l) => l.step === "dispatch").map((l) => l.result as Json);
      expect(status).toMatchObject({ connected: true, registered: true, mailbox: "env.agent" });
      for (const skill of status.agent_card.skills)
        expect(skill.tags).toEqual(expect.arrayContaining(["python", "code"]));

      const without = python(py, "hermes_agent_harness.py", ["load", "--home", tempHome(), "--env-config"], {
        ...env,
        MQ9_SERVER: guarded.url,
        MQ9_TOKEN: "",
      });
      running.push(without);
      await without.step("finalized");
      const results = without.lines.filter((l) => l.step === "dispatch").map((l) => l.result as Json);
      // Every tool says what is wrong instead of failing inside Hermes (or hanging on retries).
      // (The broker answers a CONNECT without the token, or none within 2 s on a starved machine.)
      expect(results[0]).toMatchObject({ connected: false, registered: false });
      for (const result of results.slice(1)) {
        expect(result.error).toMatch(
          /cannot connect to the mq9 broker at nats:\/\/127\.0\.0\.1:\d+: nats: '(Authorization Violation|Authentication Timeout)'/,
        );
      }
      expect(without.stderr).toMatch(/mq9: start failed: cannot connect/);
    } finally {
      await guarded.close();
    }
  }, 300_000);

  it("`hermes plugins install file://<clone>#integrations/hermes/mq9 --enable` installs and enables it", () => {
    const home = tempHome();
    const hermes = join(VENV, "bin/hermes");
    const result = spawnSync(
      hermes,
      ["plugins", "install", `file://${REPO}#integrations/hermes/mq9`, "--enable"],
      {
        env: { ...env, HERMES_HOME: home },
        encoding: "utf8",
        timeout: 120_000,
      },
    );
    expect(result.status, result.stderr + result.stdout).toBe(0);
    expect(existsSync(join(home, "plugins/mq9/plugin.yaml"))).toBe(true);
    expect(existsSync(join(home, "plugins/mq9/__init__.py"))).toBe(true);
    expect(readFileSync(join(home, "config.yaml"), "utf8")).toMatch(/enabled:\s*\n\s*- mq9/);
    rmSync(home, { recursive: true, force: true });
  }, 120_000);

  it("docs/hermes.md's MCP route: the tool name the page prints is the one Hermes registers and calls", async () => {
    const page = readFileSync(join(REPO, "docs/hermes.md"), "utf8");
    const route = page.slice(page.indexOf("## The MCP route"));
    const block = /```yaml\n([\s\S]*?)```/.exec(route)?.[1];
    const printed = /The tools appear in Hermes as `([^`]+)`/.exec(route)?.[1];
    expect(block && printed, "the MCP route gives a config block and a tool name").toBeTruthy();
    const config = join(tempHome(), "mcp.yaml");
    writeFileSync(config, block as string);
    const run = python(
      py,
      "hermes_agent_harness.py",
      ["mcp", "--home", tempHome(), "--env-config", "--mcp-config", config, "--call", printed as string],
      { ...env, MQ9_SERVER: broker.url },
    );
    running.push(run);
    const discovered = await run.step("discovered");
    expect(discovered.tools).toContain(printed);
    const turn = await run.step("turn");
    // Hermes hands an MCP result to the model inside an <untrusted_tool_result> block.
    const text = turn.tool_result as string;
    const result = JSON.parse(text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1));
    expect(Array.isArray(result.structuredContent.agents), text).toBe(true);
    expect(await run.exited).toBe(0);
  }, 180_000);

  // A is one Hermes session through both scenarios; B runs, stops, and starts again.
  let a: JsonLines;

  it("two Hermes agents: A discovers 'an agent that can write Python', finds B, calls it; B's inbox server answers", async () => {
    const b = start("serve", [
      "--server",
      broker.url,
      "--agent-id",
      "python.coder",
      "--ttl",
      "3",
      "--card",
      coderCard,
    ]);
    await b.step("serving");
    a = start("ask", ["--server", broker.url, "--agent-id", "hermes.a", "--toolsets", "mq9"]);
    a.write('mq9_discover {"query":"an agent that can write Python","limit":3}');
    const discovered = await a.step("turn");
    const agents = (discovered.tool_result as Json).agents as Json[];
    expect(agents[0]).toMatchObject({ name: "python.coder", mailbox: "python.coder" });
    expect(agents[0].agent_card.skills[0].name).toBe("Write Python");
    // The stub model passed the tool's result back through Hermes' agent loop.
    expect(discovered.final).toMatch(/^stub answer: .*python\.coder/);

    a.write('mq9_call {"target":"python.coder","message":"write hello world in Python","timeout":400}');
    const called = await a.next((l) => l.step === "turn" && l.tool === "mq9_call");
    expect(called.tool_result).toMatchObject({
      state: "completed",
      agent: "python.coder",
      artifacts: ["stub answer: write hello world in Python"],
    });
    // Our TypeScript A2A client (what the MCP tools and the bridge use) reaches B the same way.
    const a2a = new A2AClient(client, { timeoutMs: 400_000 });
    const { task } = await a2a.send("python.coder", "print the date in Python");
    expect(task!.status).toMatchObject({ state: "TASK_STATE_COMPLETED" });
    expect((task!.artifacts as Json[])[0].parts[0].text).toBe("stub answer: print the date in Python");
    // Heartbeats (every ttl/3 = 1 s): B's REPORT is what the registry shows, and keeps it past its ttl.
    let entry: Json | undefined;
    for (let i = 0; i < 60 && !entry?._status; i++) {
      [entry] = await client.discover({ text: "python.coder", include_status: true, online: true });
      if (!entry?._status) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(entry!._status).toMatchObject({ report_info: expect.stringMatching(/^running, processed=\d+$/) });
    await a2a.close();

    // B's session ends: it unregisters, its inbox stays.
    await b.close();
    expect(b.lines.at(-1)).toMatchObject({ step: "stopped" });
    expect(b.stderr).not.toContain("Task was destroyed");
  }, 600_000);

  it("B offline when A calls: the task waits in B's inbox, and A reads the result once B has started", async () => {
    const from = a.lines.length;
    a.write('mq9_call {"target":"python.coder","message":"write fizzbuzz in Python","timeout":2}');
    const pending = (await a.step("turn", undefined, from)).tool_result as Json;
    expect(pending).toMatchObject({ pending: true, state: "submitted" });
    expect(pending.task_id).toBe(pending.call_id);

    const b = start("serve", ["--server", broker.url, "--agent-id", "python.coder", "--card", coderCard]);
    await b.step("serving");
    a.write(`mq9_task {"task_id":"${pending.task_id}","timeout":400}`);
    const done = await a.next((l) => l.step === "turn" && l.tool === "mq9_task");
    expect(done.tool_result).toMatchObject({
      state: "completed",
      artifacts: ["stub answer: write fizzbuzz in Python"],
    });
    expect((done.tool_result as Json).pending).toBeUndefined();

    // A calls an agent of our TypeScript SDK (what `mq9 agent serve` runs) just as well.
    const translator = await A2AAgent.start(client, {
      card: translatorCard,
      executor: new TranslatorExecutor(),
      onError: () => {},
    });
    a.write('mq9_call {"target":"Translator","message":"hello","timeout":120}');
    const translated = await a.next((l) => l.step === "turn" && l.tool === "mq9_call", undefined, from + 2);
    expect(translated.tool_result).toMatchObject({ state: "completed", agent: "translator" });
    expect((translated.tool_result as Json).artifacts.join("")).toBe("FR: HELLO");
    await translator.stop();
    await a.close();
    await b.close();
  }, 600_000);
});
