import { describe, expect, it } from "vitest";
import { RegistrationIndex } from "../src/store/registration-index.js";
import type { AgentRow } from "../src/store/registry-store.js";

function row(mailbox: string, ttlS: number, lastSeenMs: number): AgentRow {
  return {
    mailbox,
    name: mailbox,
    bodyJson: `{"mailbox":"${mailbox}"}`,
    agentInfo: "{}",
    hasOwnName: false,
    tags: [],
    ttlS,
    registeredMs: lastSeenMs,
    lastSeenMs,
  };
}

/** Deterministic pseudo-random numbers in [0, 1). */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("registration index: live count", () => {
  it("agrees with a count of every entry through registrations, heartbeats, removals and expiries", () => {
    const index = new RegistrationIndex();
    const random = seeded(5);
    const mailboxes = Array.from({ length: 40 }, (_, i) => `agent.${i}`);
    const naive = (nowMs: number) =>
      mailboxes.filter((m) => {
        const entry = index.get(m);
        return entry !== undefined && index.isLive(entry, nowMs);
      }).length;
    let now = 1_000_000;
    for (let step = 0; step < 3000; step++) {
      const mailbox = mailboxes[Math.floor(random() * mailboxes.length)];
      const action = random();
      if (action < 0.35) {
        // ttl 0 never expires; the others expire within a few steps of the clock.
        const ttlS = [0, 1, 2, 5][Math.floor(random() * 4)];
        index.put(row(mailbox, ttlS, now - Math.floor(random() * 3000)), []);
      } else if (action < 0.6) {
        const entry = index.get(mailbox);
        if (entry) index.touch(entry, now, "{}");
      } else if (action < 0.75) {
        index.remove(mailbox);
      }
      // Mostly forward, sometimes back (a clock may step back): the count must hold either way.
      now += Math.floor(random() * 700) - (random() < 0.05 ? 2000 : 0);
      expect(index.liveCount(now)).toBe(naive(now));
      if (random() < 0.3) expect(index.liveCount(now + 1500)).toBe(naive(now + 1500));
    }
  });
});
