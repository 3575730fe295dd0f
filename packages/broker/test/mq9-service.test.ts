import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ReplyPayload, Subjects } from "@mq9/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { MessagingEngine } from "../src/engine/messaging-engine.js";
import { silentLogger } from "../src/logger.js";
import { Mq9Service } from "../src/service/mq9-service.js";
import { SqliteStore } from "../src/store/sqlite-store.js";

const opened: { store: SqliteStore; engine: MessagingEngine; dir: string }[] = [];

async function openService(): Promise<Mq9Service> {
  const dir = mkdtempSync(join(tmpdir(), "mq9-service-"));
  const store = new SqliteStore({ dataDir: dir });
  const engine = new MessagingEngine({ store });
  opened.push({ store, engine, dir });
  const service = new Mq9Service(engine, silentLogger);
  await service.handle({ subject: Subjects.mailboxCreate, payload: Buffer.from('{"name":"svc.box"}') });
  return service;
}

/** The reply answer() gives, as its JSON. */
function answer(service: Mq9Service, subject: string, payload: string, header?: string): Promise<unknown> {
  return new Promise((resolve) => {
    const request = {
      subject,
      payload: Buffer.from(payload),
      header: header ? Buffer.from(header) : undefined,
    };
    service.answer(request, (reply: ReplyPayload) => resolve(JSON.parse(String(reply))));
  });
}

afterEach(async () => {
  for (const { store, engine, dir } of opened.splice(0)) {
    await engine.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("Mq9Service", () => {
  it("answers a SEND through answer() and through handle() alike, ids in order", async () => {
    const service = await openService();
    expect(await answer(service, Subjects.send("svc.box"), "one")).toEqual({ error: "", msg_id: 0 });
    expect(await service.handle({ subject: Subjects.send("svc.box"), payload: Buffer.from("two") })).toEqual({
      error: "",
      msg_id: 1,
    });
    const fetched = (await answer(service, Subjects.fetch("svc.box"), '{"deliver":"earliest"}')) as {
      messages: { payload: string }[];
    };
    expect(fetched.messages.map((m) => Buffer.from(m.payload, "base64").toString())).toEqual(["one", "two"]);
  });

  it("answers a SEND that cannot be stored with the spec's error text, and stores nothing", async () => {
    const service = await openService();
    expect(await answer(service, Subjects.send("no.such.box"), "x")).toEqual({
      error: "mailbox no.such.box does not exist",
      code: "MAILBOX_NOT_FOUND",
    });
    const badTtl = await answer(service, Subjects.send("svc.box"), "x", "NATS/1.0\r\nmq9-ttl: soon\r\n\r\n");
    expect((badTtl as { error: string }).error).toMatch(/mq9-ttl/);
    const query = (await answer(service, Subjects.query("svc.box"), "{}")) as { messages: unknown[] };
    expect(query.messages).toEqual([]);
  });
});
