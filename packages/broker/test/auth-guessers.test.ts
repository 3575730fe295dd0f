import bcrypt from "bcryptjs";
import { connect } from "nats";
import { afterEach, describe, expect, it } from "vitest";
import type { Broker } from "../src/index.js";
import { startTestBroker, type TestBroker } from "./harness.js";

// A low cost keeps the test quick; the check is the same at any cost.
const ADMIN_HASH = bcrypt.hashSync("admin-secret", 6);
const users = [
  { user: "agent", password: "agent-secret", permissions: "all" as const },
  { user: "admin", password: ADMIN_HASH, admin: true },
  { user: "ops", password: "ops-secret", admin: true },
  { user: "bot", token: "bot-token-0123456789abcdef" },
];

/** The value of a counter of the broker's metrics with these labels (0 when it has none). */
async function counter(broker: Broker, name: string, labels: Record<string, string>): Promise<number> {
  const metric = broker.metrics.registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  const hit = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return hit?.value ?? 0;
}

/** Runs `attempt` in `parallel` loops until `stop()` says so or `deadline` passes; counts outcomes. */
function hammer(
  parallel: number,
  deadline: number,
  stop: () => boolean,
  attempt: (i: number) => Promise<void>,
) {
  const tally = { tries: 0, refused: 0, admitted: 0 };
  const loops = Array.from({ length: parallel }, async (_, loop) => {
    while (!stop() && Date.now() < deadline) {
      tally.tries++;
      try {
        await attempt(loop * 1_000_000 + tally.tries);
        tally.admitted++;
      } catch {
        tally.refused++;
      }
    }
  });
  return { tally, done: Promise.all(loops) };
}

/** Eight loops of wrong admin passwords and wrong tokens against `server`, from 127.0.0.1. */
function guessAdminAndTokens(server: string, deadline: number, stop: () => boolean) {
  return hammer(8, deadline, stop, async (i) => {
    const creds = i % 2 === 0 ? { user: "admin", pass: `guess-${i}` } : { token: `guess-${i}` };
    const nc = await connect({ servers: server, reconnect: false, ...creds });
    await nc.close();
  });
}

async function until(check: () => boolean, deadline: number): Promise<void> {
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe("auth — a guesser is slowed, honest clients from the same address are not", () => {
  let t: TestBroker | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("NATS: honest clients keep connecting from 127.0.0.1 while a guesser there hammers", async () => {
    t = await startTestBroker({ auth: { users }, registry: false });
    const server = t.servers[0];
    const deadline = Date.now() + 20_000;
    let honestDone = false;
    // Wrong passwords for the admin and wrong tokens, eight at a time, from the same address.
    const guesser = guessAdminAndTokens(server, deadline, () => honestDone);
    await until(() => guesser.tally.refused >= 20, deadline);
    expect(guesser.tally.refused).toBeGreaterThanOrEqual(20);

    const outcomes = { admitted: 0, refused: [] as string[] };
    await Promise.all(
      Array.from({ length: 5 }, async () => {
        for (let round = 0; round < 8 && Date.now() < deadline; round++) {
          try {
            const nc = await connect({
              servers: server,
              reconnect: false,
              user: "agent",
              pass: "agent-secret",
            });
            await nc.flush();
            await nc.close();
            outcomes.admitted++;
          } catch (err) {
            outcomes.refused.push(String(err));
          }
        }
      }),
    );
    honestDone = true;
    await guesser.done;

    expect(outcomes.refused).toEqual([]);
    expect(outcomes.admitted).toBe(5 * 8);
    expect(guesser.tally.admitted).toBe(0);
    // The guesser was slowed: some of its attempts waited their turn or were refused unchecked.
    expect(await counter(t.broker, "mq9_auth_throttled_total", { transport: "nats" })).toBeGreaterThan(0);
    expect(
      await counter(t.broker, "mq9_auth_failures_total", { transport: "nats", reason: "invalid" }),
    ).toBeGreaterThan(0);
  });

  it("NATS: clients whose own name is being guessed keep connecting once they have signed in", async () => {
    t = await startTestBroker({ auth: { users }, registry: false });
    const server = t.servers[0];
    const deadline = Date.now() + 20_000;
    const admin = { user: "admin", pass: "admin-secret" };
    const bot = { token: "bot-token-0123456789abcdef" };
    // Both sign in once before the guessing starts, from the guesser's own address.
    for (const creds of [admin, bot])
      await (await connect({ servers: server, reconnect: false, ...creds })).close();
    let honestDone = false;
    // Wrong passwords for admin and wrong tokens: the very names the honest clients use.
    const guesser = guessAdminAndTokens(server, deadline, () => honestDone);
    await until(() => guesser.tally.refused >= 20, deadline);
    const refused: string[] = [];
    let admitted = 0;
    for (let round = 0; round < 8 && Date.now() < deadline; round++) {
      const attempts = await Promise.allSettled(
        [admin, bot].map(async (creds) => {
          const nc = await connect({ servers: server, reconnect: false, ...creds });
          await nc.flush();
          await nc.close();
        }),
      );
      for (const a of attempts) {
        if (a.status === "fulfilled") admitted++;
        else refused.push(String(a.reason));
      }
    }
    honestDone = true;
    await guesser.done;
    expect(refused).toEqual([]);
    expect(admitted).toBe(16);
    expect(guesser.tally.admitted).toBe(0);
    expect(await counter(t.broker, "mq9_auth_throttled_total", { transport: "nats" })).toBeGreaterThan(0);
  });

  it("NATS: a guesser that tries many user names does not keep out clients that signed in before", async () => {
    t = await startTestBroker({ auth: { users }, registry: false });
    const server = t.servers[0];
    const deadline = Date.now() + 20_000;
    // Both sign in from this address before the guessing starts (the harness's client is agent).
    await (await connect({ servers: server, reconnect: false, token: "bot-token-0123456789abcdef" })).close();
    let honestDone = false;
    const guesser = hammer(
      8,
      deadline,
      () => honestDone,
      async (i) => {
        const nc = await connect({ servers: server, reconnect: false, user: `name-${i}`, pass: "guess" });
        await nc.close();
      },
    );
    await until(() => guesser.tally.refused >= 20, deadline);
    let admitted = 0;
    const refused: string[] = [];
    for (let round = 0; round < 10 && Date.now() < deadline; round++) {
      const attempts = await Promise.allSettled(
        [{ user: "agent", pass: "agent-secret" }, { token: "bot-token-0123456789abcdef" }].map(
          async (creds) => {
            const nc = await connect({ servers: server, reconnect: false, ...creds });
            await nc.close();
          },
        ),
      );
      for (const a of attempts) {
        if (a.status === "fulfilled") admitted++;
        else refused.push(String(a.reason));
      }
    }
    honestDone = true;
    await guesser.done;
    expect(refused).toEqual([]);
    expect(admitted).toBe(20);
    expect(await counter(t.broker, "mq9_auth_throttled_total", { transport: "nats" })).toBeGreaterThan(0);
  });

  it("HTTP: wrong credentials are throttled (429 with Retry-After) while the right ones are served", async () => {
    t = await startTestBroker({ auth: { users }, http: { port: 0 }, registry: false });
    const base = `http://127.0.0.1:${t.broker.http?.port}`;
    const basic = (user: string, pass: string) =>
      `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
    const deadline = Date.now() + 20_000;
    const statuses = new Map<number, number>();
    let retryAfter: string | null = null;
    let honestDone = false;
    const guesser = hammer(
      10,
      deadline,
      () => honestDone,
      async (i) => {
        const authorization = i % 2 === 0 ? `Bearer guess-${i}` : basic("admin", `guess-${i}`);
        const res = await fetch(`${base}/api/v1/mailboxes`, { headers: { authorization } });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) retryAfter = res.headers.get("retry-after");
        throw new Error(`guess answered ${res.status}`);
      },
    );
    await until(() => (statuses.get(429) ?? 0) >= 20, deadline);

    const honest: number[] = [];
    for (let i = 0; i < 20 && Date.now() < deadline; i++) {
      const res = await fetch(`${base}/api/v1/mailboxes`, {
        headers: { authorization: basic("ops", "ops-secret") },
      });
      await res.arrayBuffer();
      honest.push(res.status);
    }
    honestDone = true;
    await guesser.done;

    expect(honest).toEqual(Array(20).fill(200));
    expect(statuses.get(200) ?? 0).toBe(0);
    expect(statuses.get(429) ?? 0).toBeGreaterThanOrEqual(20);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // Only the guesses that were checked count as failures; the rest were refused unchecked.
    const checked = statuses.get(401) ?? 0;
    expect(await counter(t.broker, "mq9_auth_failures_total", { transport: "http", reason: "invalid" })).toBe(
      checked,
    );
    expect(
      await counter(t.broker, "mq9_auth_throttled_total", { transport: "http", outcome: "refused" }),
    ).toBe(statuses.get(429));
  });

  it("an unknown user name goes through the same bcrypt check as a known one", async () => {
    t = await startTestBroker({ auth: { users }, http: { port: 0 }, registry: false });
    const checks = (against: string) =>
      counter(t!.broker, "mq9_auth_password_checks_total", { hash: "bcrypt", against });
    const before = { user: await checks("user"), dummy: await checks("dummy") };

    await expect(
      connect({ servers: t.servers[0], reconnect: false, user: "nobody", pass: "whatever" }),
    ).rejects.toThrow(/Authorization/);
    expect(await checks("dummy")).toBe(before.dummy + 1);

    await expect(
      connect({ servers: t.servers[0], reconnect: false, user: "admin", pass: "wrong" }),
    ).rejects.toThrow(/Authorization/);
    expect(await checks("user")).toBe(before.user + 1);

    // A known name with a plain password that fails pays the same bcrypt check: no kind of name answers sooner.
    await expect(
      connect({ servers: t.servers[0], reconnect: false, user: "ops", pass: "wrong" }),
    ).rejects.toThrow(/Authorization/);
    expect(await checks("dummy")).toBe(before.dummy + 2);

    const res = await fetch(`http://127.0.0.1:${t.broker.http?.port}/api/v1/mailboxes`, {
      headers: { authorization: `Basic ${Buffer.from("nobody-else:whatever").toString("base64")}` },
    });
    expect(res.status).toBe(401);
    expect(await checks("dummy")).toBe(before.dummy + 3);
  });
});
