// Sample A2A agents (cards and executors) that the client, gateway, MCP and CLI tests serve over mq9.
import { Message } from "@a2a-js/sdk";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import type { Mq9Client } from "@mq9/client";
import { A2AClient, partsText, TaskEvents } from "@mq9/client/a2a";

/** The text of the message that started this turn. */
export function userText(context: RequestContext): string {
  return partsText((Message.toJSON(context.userMessage) as { parts?: unknown }).parts);
}

export const translatorCard = {
  name: "Translator",
  description: "Translates short texts between English and French.",
  skills: [
    {
      id: "translate",
      name: "Translate",
      description: "Translate a sentence from English to French",
      tags: ["translation", "french"],
    },
  ],
};

/** Streams its answer in two artifact chunks: "FR:" then the upper-cased text. */
export class TranslatorExecutor implements AgentExecutor {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working("translating");
    events.artifact("FR:", { artifactId: "translation", lastChunk: false });
    events.artifact(` ${userText(context).toUpperCase()}`, {
      artifactId: "translation",
      append: true,
      lastChunk: true,
    });
    events.complete("done");
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

export const coderCard = {
  name: "Python Coder",
  description: "Writes Python programs and scripts from a plain-language description.",
  skills: [
    {
      id: "write-python",
      name: "Write Python code",
      description: "Writes Python source code, scripts and functions on request",
      tags: ["python", "code"],
    },
  ],
};

/** Multi-turn: asks for the Python version first, then writes the code. */
export class CoderExecutor implements AgentExecutor {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    if (!context.task) {
      events.inputRequired("Which Python version?");
    } else {
      events.working();
      events.artifact(`# python ${userText(context)}\nprint("hello")`, { artifactId: "code" });
      events.complete();
    }
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

export const slowCard = {
  name: "Slow Worker",
  description: "Works on a job until told to stop.",
  skills: [{ id: "wait", name: "Wait", description: "Waits until canceled", tags: ["slow"] }],
};

/** Runs until canceled; `started` resolves once a task is running. */
export class SlowExecutor implements AgentExecutor {
  private readonly cancels = new Map<string, () => void>();
  private startedResolve!: (taskId: string) => void;
  started = new Promise<string>((resolve) => {
    this.startedResolve = resolve;
  });

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working("working");
    await new Promise<void>((resolve) => {
      this.cancels.set(context.taskId, resolve);
      this.startedResolve(context.taskId);
    });
    events.canceled("stopped on request");
    events.finished();
  }

  async cancelTask(taskId: string): Promise<void> {
    this.cancels.get(taskId)?.();
  }
}

export const writerCard = {
  name: "Writer",
  description: "Writes a sentence and has it translated by another agent.",
  skills: [{ id: "write", name: "Write", description: "Writes and translates", tags: ["writing"] }],
};

/** Talks to the translator agent over mq9 and returns its translation. */
export class WriterExecutor implements AgentExecutor {
  constructor(private readonly client: Mq9Client) {}

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    const a2a = new A2AClient(this.client, { timeoutMs: 20_000 });
    try {
      const [translator] = await a2a.discover({ text: "translates french" });
      const { task } = await a2a.send(translator, `draft: ${userText(context)}`);
      const artifacts = (task?.artifacts ?? []) as { parts: unknown }[];
      events.artifact(
        `writer got: ${artifacts.flatMap((a) => (a.parts as unknown[]).map((p) => partsText([p]))).join("")}`,
      );
      events.complete();
    } catch (err) {
      events.fail((err as Error).message);
    } finally {
      await a2a.close();
      events.finished();
    }
  }
  async cancelTask(): Promise<void> {}
}

export const gatedCard = {
  name: "Gated Translator",
  description: "Translates once the test lets it.",
  skills: [{ id: "gated", name: "Gated", description: "Waits for a go", tags: ["gated"] }],
};

/** Starts working, then finishes with a translation when `release()` is called. */
export class GatedExecutor implements AgentExecutor {
  private gate!: () => void;
  private readonly opened = new Promise<void>((resolve) => {
    this.gate = resolve;
  });

  release(): void {
    this.gate();
  }

  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const events = new TaskEvents(context, bus);
    events.start();
    events.working();
    await this.opened;
    events.artifact(`FR: ${userText(context).toUpperCase()}`);
    events.complete();
    events.finished();
  }
  async cancelTask(): Promise<void> {}
}

/**
 * Sends one text message to an agent's A2A HTTP endpoint (JSON-RPC SendMessage, A2A 1.0) and
 * returns the state of the task it answered with, or the whole body when there is none.
 */
export async function sendTextOverHttp(agentUrl: string, text: string): Promise<string> {
  const reply = await fetch(agentUrl, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text }] } },
    }),
  });
  const body = (await reply.json()) as { result?: { task?: { status?: { state?: string } } } };
  return body.result?.task?.status?.state ?? JSON.stringify(body);
}
