// The typed calls between `mq9 serve` and its orchestrator thread, over a real MessageChannel
// (the structured clone a worker thread uses): results, failures as data, unknown calls.
import { MessageChannel } from "node:worker_threads";
import { Mq9Error } from "@mq9/client";
import { OrchestratorError } from "@mq9/orchestrator";
import { afterEach, describe, expect, it } from "vitest";
import { toError, toFailure } from "../src/serve/failure-converter.js";
import {
  CallDispatcher,
  CallForwarder,
  type CallMessage,
  defineApi,
  type ReplyMessage,
} from "../src/serve/worker-calls.js";

interface Sample {
  add(a: number, b: number): number;
  later(text: string): Promise<string>;
  refuse(): Promise<never>;
  optional?(): string;
}

const SAMPLE_API = defineApi<Sample>()(["add", "later", "refuse", "optional"]);

class SampleImpl implements Sample {
  add(a: number, b: number): number {
    return a + b;
  }
  async later(text: string): Promise<string> {
    return text.toUpperCase();
  }
  async refuse(): Promise<never> {
    throw new OrchestratorError("QUEUE_FULL", "the queue is full", {
      retryAfterSeconds: 3,
      cause: new Mq9Error("TIMEOUT", "broker slow"),
    });
  }
}

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const channel of channels.splice(0)) {
    channel.port1.close();
    channel.port2.close();
  }
});

/** A forwarder on port1 and a dispatcher on port2 of a real channel. */
function connected(target: Sample = new SampleImpl()): CallForwarder<Sample> {
  const channel = new MessageChannel();
  channels.push(channel);
  const dispatcher = new CallDispatcher(target, SAMPLE_API, (reply) => channel.port2.postMessage(reply));
  channel.port2.on("message", (message: CallMessage) => dispatcher.dispatch(message));
  const forwarder = new CallForwarder<Sample>(SAMPLE_API, (message) => channel.port1.postMessage(message));
  channel.port1.on("message", (reply: ReplyMessage) => forwarder.settle(reply));
  return forwarder;
}

describe("worker calls", () => {
  it("forwards each method of the definition and answers with its result", async () => {
    const { api } = connected();
    expect(Object.keys(api).sort()).toEqual(["add", "later", "optional", "refuse"]);
    expect(await api.add(2, 3)).toBe(5);
    expect(await api.later("hi")).toBe("HI");
  });

  it("a failure keeps its class, code, retry hint and cause across the thread", async () => {
    const { api } = connected();
    const err = await api.refuse().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OrchestratorError);
    expect(err).toMatchObject({ code: "QUEUE_FULL", message: "the queue is full", retryAfterSeconds: 3 });
    const cause = (err as Error).cause;
    expect(cause).toBeInstanceOf(Mq9Error);
    expect(cause).toMatchObject({ code: "TIMEOUT", retryable: true, message: "broker slow" });
  });

  it("a method the target lacks, or a name outside the definition, fails clearly", async () => {
    const { api } = connected();
    await expect(api.optional()).rejects.toThrow("unknown call optional");
    const replies: ReplyMessage[] = [];
    new CallDispatcher<Sample>(new SampleImpl(), SAMPLE_API, (reply) => replies.push(reply)).dispatch({
      type: "call",
      id: 7,
      method: "constructor",
      args: [],
    });
    expect(replies).toEqual([
      { type: "error", id: 7, failure: { kind: "other", message: "unknown call constructor" } },
    ]);
  });

  it("a call the worker cannot take fails with the poster's error; failAll ends the waiting ones", async () => {
    const refused = new CallForwarder<Sample>(SAMPLE_API, () => {
      throw new OrchestratorError("NOT_READY", "the orchestrator is stopping");
    });
    await expect(refused.api.add(1, 1)).rejects.toMatchObject({ code: "NOT_READY" });
    const silent = new CallForwarder<Sample>(SAMPLE_API, () => {});
    const waiting = silent.api.later("x");
    silent.failAll(new Error("the thread stopped"));
    await expect(waiting).rejects.toThrow("the thread stopped");
  });

  it("errors of other kinds and thrown non-errors become plain errors with their text", () => {
    expect(toError(toFailure(new TypeError("bad")))).toEqual(new Error("bad"));
    expect(toError(toFailure("a string"))).toEqual(new Error("a string"));
    const mq9 = toError(toFailure(new Mq9Error("MAILBOX_NOT_FOUND", "mailbox x does not exist")));
    expect(mq9).toMatchObject({ name: "Mq9Error", code: "MAILBOX_NOT_FOUND", retryable: false });
  });
});
