import { StringCodec } from "nats";
import { afterEach, expect, test } from "vitest";
import { RawClient, type Started, startListener, waitUntil } from "./nats-harness.js";

const sc = StringCodec();
const DURATION_MS = 3000;
const SOCKETS_PER_ROUND = 16;
let s: Started | undefined;

afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** mulberry32: small, fast, and reproducible from the printed seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Extra CONNECT fields for one connection (credentials, when the listener wants them). */
type Credentials = () => Record<string, unknown>;

function generator(rand: () => number, credentials: Credentials = () => ({})) {
  const int = (n: number): number => Math.floor(rand() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const tokens = ["fuzz", "a", "b", "*", ">", "_INBOX", "x1", "", "$mq9", "AI", "ünï"] as const;
  const subject = (): string => Array.from({ length: 1 + int(4) }, () => pick(tokens)).join(".");
  const payload = (): string => "p".repeat(int(300));
  const header = (): string => `NATS/1.0\r\nK${int(9)}: v\r\n\r\n`;
  const validOp = (): string => {
    switch (int(9)) {
      case 0:
        return `CONNECT ${JSON.stringify({ verbose: rand() < 0.3, pedantic: rand() < 0.3, echo: rand() < 0.5, headers: rand() < 0.7, no_responders: rand() < 0.5, ...credentials() })}\r\n`;
      case 1:
      case 2: {
        const body = payload();
        return `PUB ${subject()}${rand() < 0.3 ? ` ${subject()}` : ""} ${body.length}\r\n${body}\r\n`;
      }
      case 3: {
        const h = header();
        const body = payload();
        return `HPUB ${subject()} ${h.length} ${h.length + body.length}\r\n${h}${body}\r\n`;
      }
      case 4:
        return `SUB ${subject()}${rand() < 0.3 ? " q" : ""} ${int(20)}\r\n`;
      case 5:
        return `UNSUB ${int(20)}${rand() < 0.5 ? ` ${int(5)}` : ""}\r\n`;
      case 6:
        return "PING\r\n";
      case 7:
        return "PONG\r\n";
      default:
        return `pub ${subject()} 0\r\n\r\n`;
    }
  };
  const mutate = (bytes: Buffer): Buffer => {
    const out = Buffer.from(bytes);
    switch (int(5)) {
      case 0: // flip a few bytes
        for (let i = 0; i < 1 + int(4); i++) if (out.length > 0) out[int(out.length)] = int(256);
        return out;
      case 1: // truncate
        return out.subarray(0, int(out.length + 1));
      case 2: // insert random bytes
        return Buffer.concat([
          out.subarray(0, int(out.length + 1)),
          Buffer.from(Array.from({ length: 1 + int(20) }, () => int(256))),
          out,
        ]);
      case 3: // oversize or wrong size fields
        return Buffer.from(
          out.toString("latin1").replace(/ (\d+)\r\n/, () => ` ${int(10_000)}\r\n`),
          "latin1",
        );
      default: // a huge unterminated line
        return Buffer.concat([out, Buffer.alloc(int(2000), 0x41)]);
    }
  };
  /** One connection's worth of input: mostly valid protocol with mutations and noise mixed in. */
  const script = (): Buffer[] => {
    const parts: Buffer[] = [];
    if (rand() < 0.8) {
      const connect = { headers: true, no_responders: true, ...credentials() };
      parts.push(Buffer.from(`CONNECT ${JSON.stringify(connect)}\r\n`));
    }
    for (let i = 0, n = 1 + int(15); i < n; i++) {
      const op = Buffer.from(validOp());
      const r = rand();
      parts.push(
        r < 0.6 ? op : r < 0.9 ? mutate(op) : Buffer.from(Array.from({ length: int(200) }, () => int(256))),
      );
    }
    // Re-split the stream at random points so ops straddle writes.
    const all = Buffer.concat(parts);
    const chunks: Buffer[] = [];
    for (let at = 0; at < all.length; ) {
      const len = 1 + int(rand() < 0.5 ? 8 : 512);
      chunks.push(all.subarray(at, at + len));
      at += len;
    }
    return chunks;
  };
  return { int, script, rand };
}

test("fuzz — random and mutated protocol from many sockets never breaks the server or other clients", async () => {
  const seed = Number(process.env.NATS_FUZZ_SEED ?? Date.now() % 2 ** 31);
  const started = await startListener({ maxPayload: 4096, maxControlLine: 512, authTimeoutMs: 500 });
  s = started;
  const { int, script, rand } = generator(prng(seed));
  // The service path too: its replies go back to fuzzed reply subjects.
  started.listener.setService({ answer: (req, respond) => respond([req.payload], true) });
  try {
    const healthy = await started.nats();
    healthy.subscribe("fuzz.echo", { callback: (_e, m) => m.respond(m.data) });
    // The first request creates the client's _INBOX subscription, which belongs in the baseline.
    await healthy.request("fuzz.echo", sc.encode("warm-up"));
    const baseline = started.listener.subscriptionCount;
    const deadline = Date.now() + DURATION_MS;
    let rounds = 0;
    while (Date.now() < deadline) {
      rounds++;
      const raws = await Promise.all(
        Array.from({ length: SOCKETS_PER_ROUND }, () => RawClient.connect(started.port)),
      );
      await Promise.all(
        raws.map(async (raw) => {
          for (const chunk of script()) {
            raw.send(chunk);
            if (rand() < 0.2) await new Promise((resolve) => setImmediate(resolve));
          }
          const ending = int(3);
          if (ending === 0) raw.socket.end();
          else if (ending === 1) raw.socket.resetAndDestroy();
          await new Promise((resolve) => setTimeout(resolve, int(20)));
          raw.destroy();
        }),
      );
      const reply = await healthy.request("fuzz.echo", sc.encode(`round ${rounds}`), { timeout: 2000 });
      expect(sc.decode(reply.data)).toBe(`round ${rounds}`);
    }
    await waitUntil(() => started.listener.connectionCount === 1, 5000, "fuzz connections to be cleaned up");
    await waitUntil(() => started.listener.subscriptionCount === baseline, 5000, "fuzz subscriptions to go");
    const reply = await healthy.request("fuzz.echo", sc.encode("after"), { timeout: 2000 });
    expect(sc.decode(reply.data)).toBe("after");
    expect(rounds).toBeGreaterThan(1);
  } catch (err) {
    throw new Error(
      `nats fuzz failed with seed ${seed} (rerun with NATS_FUZZ_SEED=${seed}): ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
});

test("fuzz — an authenticated multi-user listener: no fuzzer sees another client's replies", async () => {
  const seed = Number(process.env.NATS_FUZZ_SEED ?? Date.now() % 2 ** 31);
  const rand = prng(seed);
  const choices: Record<string, unknown>[] = [
    { auth_token: "agent-token" },
    { user: "open", pass: "open-pw" },
    { user: "limited", pass: "limited-pw" },
    { auth_token: "wrong" },
    { user: "open", pass: "nope" },
    { nkey: "UBADKEY", sig: "AAAA" },
    {},
  ];
  const started = await startListener({
    maxPayload: 4096,
    maxControlLine: 512,
    authTimeoutMs: 500,
    // Short, so that the fuzzers' failed CONNECTs slow the others down a little (the held-input path
    // is exercised) without turning most connections into authentication timeouts.
    authThrottle: { stepMs: 1, maxDelayMs: 5 },
    auth: {
      users: [
        { user: "healthy", token: "healthy-token", admin: true },
        { user: "agent", token: "agent-token", permissions: "agent" },
        { user: "open", password: "open-pw", permissions: "all" },
        {
          user: "limited",
          password: "limited-pw",
          permissions: {
            publish: { deny: ["a.>"] },
            subscribe: { allow: [">"], deny: ["b.*", "_INBOX.x1"] },
          },
        },
      ],
    },
  });
  s = started;
  const { int, script } = generator(rand, () => choices[Math.floor(rand() * choices.length)]);
  started.listener.setService({
    answer: (req, respond) => respond(`ANSWER-${sc.decode(req.payload)}`, true),
  });
  try {
    const healthy = await started.nats({ token: "healthy-token" });
    const responder = await started.nats({ token: "healthy-token" });
    // Requests are public (any > subscriber may see them); the answers are what must stay private.
    responder.subscribe("fuzz.echo", {
      callback: (_e, m) => m.respond(sc.encode(`ANSWER-${sc.decode(m.data)}`)),
    });
    await responder.flush();
    await healthy.request("fuzz.echo", sc.encode("warm-up"));
    const baseline = started.listener.subscriptionCount;
    const deadline = Date.now() + DURATION_MS;
    let rounds = 0;
    while (Date.now() < deadline) {
      rounds++;
      const raws = await Promise.all(
        Array.from({ length: SOCKETS_PER_ROUND }, () => RawClient.connect(started.port)),
      );
      // Half the fuzzers first try to listen to everything, with credentials that may or may not work.
      await Promise.all(
        raws.map(async (raw) => {
          if (rand() < 0.5) return;
          const connect = { verbose: false, ...choices[int(choices.length)] };
          raw.send(`CONNECT ${JSON.stringify(connect)}\r\nSUB > 90\r\nSUB _INBOX.> 91\r\nPING\r\n`);
          await raw.waitFor(/PONG|-ERR/, 2000).catch(() => {});
        }),
      );
      // While the fuzzers are connected, the healthy client asks questions whose answers are secret.
      const secret = `SECRET-${rounds}-${int(1e9)}`;
      const asking = Promise.all([
        healthy.request("fuzz.echo", sc.encode(secret), { timeout: 2000 }),
        healthy.request("$mq9.AI.MSG.QUERY.fuzz", sc.encode(secret), { timeout: 2000 }),
      ]);
      await Promise.all(
        raws.map(async (raw) => {
          for (const chunk of script()) {
            raw.send(chunk);
            if (rand() < 0.2) await new Promise((resolve) => setImmediate(resolve));
          }
          await new Promise((resolve) => setTimeout(resolve, int(20)));
        }),
      );
      for (const reply of await asking) expect(sc.decode(reply.data)).toBe(`ANSWER-${secret}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const raw of raws) {
        expect(raw.text, "a fuzzer received the healthy client's reply").not.toContain(`ANSWER-${secret}`);
        const ending = int(3);
        if (ending === 0) raw.socket.end();
        else if (ending === 1) raw.socket.resetAndDestroy();
        raw.destroy();
      }
    }
    await waitUntil(() => started.listener.connectionCount === 2, 5000, "fuzz connections to be cleaned up");
    await waitUntil(() => started.listener.subscriptionCount === baseline, 5000, "fuzz subscriptions to go");
    const reply = await healthy.request("fuzz.echo", sc.encode("after"), { timeout: 2000 });
    expect(sc.decode(reply.data)).toBe("ANSWER-after");
    expect(rounds).toBeGreaterThan(1);
  } catch (err) {
    throw new Error(
      `multi-user nats fuzz failed with seed ${seed} (rerun with NATS_FUZZ_SEED=${seed}): ${(err as Error).message}`,
      { cause: err },
    );
  }
});
