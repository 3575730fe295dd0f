import { describe, expect, it } from "vitest";
import { captureLogger, startListener } from "./nats-harness.js";

const users = [{ user: "agent", token: "right-token" }];

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: PromiseSettledResult<T> }> {
  const started = performance.now();
  const [result] = await Promise.allSettled([work()]);
  return { ms: performance.now() - started, result };
}

describe("nats listener — failed authentications are throttled", () => {
  it("each failure from an address makes the next CONNECT from there wait longer; the log is rate-limited", async () => {
    const logger = captureLogger();
    const s = await startListener({
      auth: { users },
      authThrottle: { stepMs: 150, maxDelayMs: 2000 },
      logger,
    });
    try {
      const attempts: number[] = [];
      for (let i = 0; i < 5; i++) {
        const { ms, result } = await timed(() => s.nats({ token: `wrong-${i}` }));
        expect(result.status).toBe("rejected");
        expect(String((result as PromiseRejectedResult).reason)).toMatch(/Authorization Violation/);
        attempts.push(ms);
      }
      // The k-th attempt waits for k-1 earlier failures: 150 ms each (a lower bound only).
      expect(attempts[4]).toBeGreaterThanOrEqual(4 * 150 - 20);
      expect(attempts[2]).toBeGreaterThanOrEqual(2 * 150 - 20);
      // The right token still gets in, after the same wait: all tokens share one name ("token"), so a
      // guesser learns nothing sooner. Names that did not fail are checked at once (auth-guessers.test.ts).
      const { ms, result } = await timed(() => s.nats({ token: "right-token" }));
      expect(result.status).toBe("fulfilled");
      expect(ms).toBeGreaterThanOrEqual(5 * 150 - 20);
      const warnings = logger.entries.filter(
        (e) => e.level === "warn" && /authentication failed/.test(e.msg ?? ""),
      );
      expect(warnings).toHaveLength(1);
      expect(warnings[0].obj).toMatchObject({ ip: "127.0.0.1" });
    } finally {
      await s.stop();
    }
  });

  it("guesses sent in parallel are taken one at a time", async () => {
    const s = await startListener({ auth: { users }, authThrottle: { stepMs: 100, maxDelayMs: 100 } });
    try {
      await expect(s.nats({ token: "first-wrong" })).rejects.toThrow(/Authorization/);
      const started = performance.now();
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) => s.nats({ token: `parallel-${i}` })),
      );
      expect(results.every((r) => r.status === "rejected")).toBe(true);
      // One check per 100 ms: six of them cannot all be answered in less than 600 ms.
      expect(performance.now() - started).toBeGreaterThanOrEqual(6 * 100 - 20);
    } finally {
      await s.stop();
    }
  });

  it("PUBs sent right behind a delayed CONNECT are handled after it, in order", async () => {
    const s = await startListener({ auth: { users }, authThrottle: { stepMs: 100 } });
    try {
      await expect(s.nats({ token: "wrong" })).rejects.toThrow(/Authorization/);
      const raw = await s.raw();
      await raw.waitFor("INFO");
      raw.send(
        'CONNECT {"auth_token":"right-token","verbose":false}\r\nSUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n',
      );
      await raw.waitFor("PONG");
      expect(raw.text).toMatch(/MSG a 1 2\r\nhi\r\nPONG\r\n$/);
    } finally {
      await s.stop();
    }
  });
});
