import { connect, type Mq9Client } from "@mq9/client";
import { A2AAgent } from "@mq9/client/a2a";
import {
  CoderExecutor,
  coderCard,
  ensurePythonEnv,
  skipWithoutPython,
  TranslatorExecutor,
  translatorCard,
} from "@mq9/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Mq9Serve, mq9OnPath, mq9Serve, python } from "./harness.js";

// biome-ignore lint/suspicious/noExplicitAny: the script prints JSON
type Json = Record<string, any>;

/**
 * Streams through the A2A gateway with the published Python clients of both A2A versions,
 * each from its own pinned venv: a2a-sdk 0.3.26 (`message/stream`, whose client refuses a
 * second Task in one stream) and a2a-sdk 1.3.0 (`SendStreamingMessage`).
 */
describe.skipIf(skipWithoutPython("a2a-v03") || skipWithoutPython())(
  "A2A streams through the gateway, read by the published Python clients",
  () => {
    let v03: string;
    let v1: string;
    let broker: Mq9Serve;
    let client: Mq9Client;
    const agents: A2AAgent[] = [];
    const { env } = mq9OnPath();
    const stream = async (py: string, version: string, agent: string, text: string) => {
      const run = python(py, "a2a_streams.py", [version, `${broker.http}/a2a/${agent}`, text], env);
      const done = await run.next((l) => l.op === "done", 120_000);
      await run.exited;
      return { done, events: run.lines.filter((l) => l.op === "event") as Json[] };
    };

    beforeAll(async () => {
      v03 = await ensurePythonEnv("a2a-v03");
      v1 = await ensurePythonEnv();
      broker = await mq9Serve(env);
      client = await connect(broker.url);
      agents.push(
        await A2AAgent.start(client, {
          card: translatorCard,
          executor: new TranslatorExecutor(),
          onError: () => {},
        }),
        await A2AAgent.start(client, { card: coderCard, executor: new CoderExecutor(), onError: () => {} }),
      );
    }, 900_000);

    afterAll(async () => {
      for (const agent of agents) await agent.stop();
      await client?.close();
      await broker?.close();
    });

    it("a2a-sdk 0.3.26: message/stream completes and ends with the final status-update", async () => {
      const { done, events } = await stream(v03, "v0.3", "translator", "good night");
      expect(done).toEqual({ op: "done", ok: true });
      expect(events.map((e) => [e.kind, e.state, e.final])).toEqual([
        ["task", "submitted", undefined],
        ["status-update", "working", false],
        ["artifact-update", "working", undefined],
        ["artifact-update", "working", undefined],
        ["status-update", "completed", true],
      ]);
    }, 300_000);

    it("a2a-sdk 0.3.26: a stream that stops at input-required ends with that status-update, final", async () => {
      const { done, events } = await stream(v03, "v0.3", "python.coder", "write a script");
      expect(done).toEqual({ op: "done", ok: true });
      expect(events.map((e) => [e.kind, e.state, e.final])).toEqual([
        ["task", "submitted", undefined],
        ["status-update", "input-required", true],
      ]);
    }, 300_000);

    it("a2a-sdk 1.3.0: SendStreamingMessage completes: the Task, its updates, the final status, the task as stored", async () => {
      const { done, events } = await stream(v1, "v1.0", "translator", "good night");
      expect(done).toEqual({ op: "done", ok: true });
      expect(events.map((e) => [e.kind, e.state])).toEqual([
        ["task", "TASK_STATE_SUBMITTED"],
        ["status_update", "TASK_STATE_WORKING"],
        ["artifact_update", null],
        ["artifact_update", null],
        ["status_update", "TASK_STATE_COMPLETED"],
        ["task", "TASK_STATE_COMPLETED"],
      ]);
    }, 300_000);
  },
);
