import { describe, expect, test } from "vitest";
import { isValidSubscribeSubject, subjectMatches } from "../src/nats/subject.js";
import { Sublist } from "../src/nats/sublist.js";

interface Entry {
  subject: string;
  queue: string | undefined;
  name: string;
}

const entry = (name: string, subject: string, queue?: string): Entry => ({ name, subject, queue });
const names = (xs: readonly Entry[]): string[] => xs.map((x) => x.name).sort();

describe("nats sublist — matching", () => {
  test("literal, `*` and `>` subscriptions match the right subjects", () => {
    const list = new Sublist<Entry>();
    for (const e of [
      entry("lit", "a.b.c"),
      entry("star-mid", "a.*.c"),
      entry("star-end", "a.b.*"),
      entry("tail", "a.>"),
      entry("all", ">"),
      entry("other", "x.y"),
    ]) {
      list.insert(e);
    }
    expect(names(list.match("a.b.c").psubs)).toEqual(["all", "lit", "star-end", "star-mid", "tail"]);
    expect(names(list.match("a.x.c").psubs)).toEqual(["all", "star-mid", "tail"]);
    expect(names(list.match("a").psubs)).toEqual(["all"]);
    expect(names(list.match("a.b").psubs)).toEqual(["all", "tail"]);
    expect(names(list.match("a.b.c.d").psubs)).toEqual(["all", "tail"]);
    expect(names(list.match("x.y").psubs)).toEqual(["all", "other"]);
  });

  test("queue members are grouped by queue name across patterns", () => {
    const list = new Sublist<Entry>();
    list.insert(entry("q1", "jobs.*", "workers"));
    list.insert(entry("q2", "jobs.eu", "workers"));
    list.insert(entry("r1", "jobs.>", "reporters"));
    list.insert(entry("plain", "jobs.eu"));
    const result = list.match("jobs.eu");
    expect(names(result.psubs)).toEqual(["plain"]);
    expect(result.qsubs.map((g) => names(g)).sort()).toEqual([["q1", "q2"], ["r1"]]);
  });

  test("the cache never serves a stale result after inserts and removes", () => {
    const list = new Sublist<Entry>();
    const lit = entry("lit", "_INBOX.abc.1");
    const inbox = entry("inbox", "_INBOX.abc.*");
    expect(list.match("_INBOX.abc.1").psubs).toEqual([]);
    list.insert(inbox);
    expect(names(list.match("_INBOX.abc.1").psubs)).toEqual(["inbox"]);
    list.insert(lit);
    expect(names(list.match("_INBOX.abc.1").psubs)).toEqual(["inbox", "lit"]);
    expect(list.remove(inbox)).toBe(true);
    expect(names(list.match("_INBOX.abc.1").psubs)).toEqual(["lit"]);
    expect(list.remove(inbox)).toBe(false);
    list.remove(lit);
    expect(list.match("_INBOX.abc.1").psubs).toEqual([]);
    expect(list.size).toBe(0);
  });

  test("a one-off match is answered but not cached, so it pushes no repeating subject out", () => {
    const list = new Sublist<Entry>(4);
    list.insert(entry("inbox", "_INBOX.abc.*"));
    list.insert(entry("send", "$mq9.AI.MSG.SEND.*"));
    expect(names(list.match("$mq9.AI.MSG.SEND.q").psubs)).toEqual(["send"]);
    for (let i = 0; i < 100; i++)
      expect(names(list.match(`_INBOX.abc.${i}`, false).psubs)).toEqual(["inbox"]);
    // biome-ignore lint/complexity/useLiteralKeys: reaching into the private cache to see what it holds
    expect([...list["cache"].keys()]).toEqual(["$mq9.AI.MSG.SEND.q"]);
  });

  test("one-off subjects that differ only in their last token share a match only when that token cannot matter", () => {
    const list = new Sublist<Entry>();
    const inbox = entry("inbox", "_INBOX.abc.*");
    list.insert(inbox);
    list.insert(entry("spy", "_INBOX.>"));
    expect(names(list.match("_INBOX.abc.1", false).psubs)).toEqual(["inbox", "spy"]);
    expect(names(list.match("_INBOX.abc.2", false).psubs)).toEqual(["inbox", "spy"]);
    // Another prefix, or another number of tokens, is matched afresh.
    expect(names(list.match("_INBOX.other.1", false).psubs)).toEqual(["spy"]);
    expect(names(list.match("_INBOX.abc.2.3", false).psubs)).toEqual(["spy"]);
    expect(names(list.match("_INBOX.abc.4", false).psubs)).toEqual(["inbox", "spy"]);
    // A literal subscription at the last level makes the token matter.
    list.insert(entry("exact", "_INBOX.abc.7"));
    expect(names(list.match("_INBOX.abc.6", false).psubs)).toEqual(["inbox", "spy"]);
    expect(names(list.match("_INBOX.abc.7", false).psubs)).toEqual(["exact", "inbox", "spy"]);
    expect(names(list.match("_INBOX.abc.8", false).psubs)).toEqual(["inbox", "spy"]);
    // Any change of the subscriptions is seen at once.
    list.remove(inbox);
    expect(names(list.match("_INBOX.abc.9", false).psubs)).toEqual(["spy"]);
  });

  test("removing everything prunes the trie, and a tiny cache still answers correctly", () => {
    const list = new Sublist<Entry>(4);
    const entries = Array.from({ length: 200 }, (_, i) =>
      entry(`e${i}`, i % 3 === 0 ? `s.${i}.*` : `s.${i}.x`),
    );
    for (const e of entries) list.insert(e);
    for (let i = 0; i < 200; i++) expect(names(list.match(`s.${i}.x`).psubs)).toEqual([`e${i}`]);
    for (const e of entries) list.remove(e);
    expect(list.size).toBe(0);
    // biome-ignore lint/complexity/useLiteralKeys: reaching into the private trie to prove it was pruned
    expect(list["root"].literal.size).toBe(0);
  });
});

describe("nats subjects — validation and matching", () => {
  test("subscription subjects", () => {
    for (const ok of ["a", "a.b", "a.*", "*.b", ">", "a.>", "a.*.>", "ünï.x", "foo*"]) {
      expect(isValidSubscribeSubject(ok, false), ok).toBe(true);
    }
    for (const bad of ["", ".", "a.", ".a", "a..b", "a.>.b", ">.a"]) {
      expect(isValidSubscribeSubject(bad, false), bad).toBe(false);
    }
    expect(isValidSubscribeSubject("foo*", true)).toBe(false);
    expect(isValidSubscribeSubject("a.b>", true)).toBe(false);
  });

  test("pattern matching agrees with the trie's rules", () => {
    expect(subjectMatches("a.*", "a.b")).toBe(true);
    expect(subjectMatches("a.*", "a.b.c")).toBe(false);
    expect(subjectMatches("a.>", "a")).toBe(false);
    expect(subjectMatches("a.>", "a.b.c")).toBe(true);
    expect(subjectMatches(">", "x")).toBe(true);
    expect(subjectMatches("a.b", "a.b")).toBe(true);
    expect(subjectMatches("a.b", "a.bc")).toBe(false);
    expect(subjectMatches("a.b.c", "a.b")).toBe(false);
  });
});
