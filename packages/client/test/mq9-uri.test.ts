import { describe, expect, it } from "vitest";
import { formatMq9Uri, Mq9Error, parseMq9Uri } from "../src/index.js";
import { targetAddress } from "../src/mq9-uri.js";
import { parseServerUrl } from "../src/server-url.js";

describe("parseMq9Uri", () => {
  it.each([
    [
      "mq9://broker/agent.inbox",
      { scheme: "mq9", host: "broker", port: 4332, mailAddress: "agent.inbox", tls: false },
    ],
    [
      "mq9://localhost:4332",
      { scheme: "mq9", host: "localhost", port: 4332, mailAddress: undefined, tls: false },
    ],
    [
      "mq9://localhost:4332/",
      { scheme: "mq9", host: "localhost", port: 4332, mailAddress: undefined, tls: false },
    ],
    [
      "mq9s://demo.example.com:7443/a.b.c",
      { scheme: "mq9s", host: "demo.example.com", port: 7443, mailAddress: "a.b.c", tls: true },
    ],
    ["MQ9://Broker:1/x1", { scheme: "mq9", host: "broker", port: 1, mailAddress: "x1", tls: false }],
    [
      "mq9://[::1]:5000/d0q9c3k5r8s1a2b3c4d5",
      { scheme: "mq9", host: "::1", port: 5000, mailAddress: "d0q9c3k5r8s1a2b3c4d5", tls: false },
    ],
    ["mq9://10.0.0.7/box", { scheme: "mq9", host: "10.0.0.7", port: 4332, mailAddress: "box", tls: false }],
  ])("reads %s", (uri, expected) => {
    expect(parseMq9Uri(uri)).toEqual(expected);
  });

  it.each([
    ["nats://broker/box", "scheme"],
    ["mq9:///box", "host"],
    ["mq9://broker/Agent.Inbox", "bad mail_address"],
    ["mq9://broker/a..b", "consecutive dots"],
    ["mq9://broker/a/b", "bad mail_address"],
    ["mq9://broker/box?x=1", "query"],
    ["mq9://broker:99999/box", "not a URL"],
    ["broker/box", "scheme"],
  ])("rejects %s (%s)", (uri, why) => {
    const err = (() => {
      try {
        parseMq9Uri(uri);
      } catch (e) {
        return e as Mq9Error;
      }
    })();
    expect(err).toBeInstanceOf(Mq9Error);
    expect(err?.code).toBe("INVALID_REQUEST");
    expect(err?.message).toContain(why);
  });
});

describe("formatMq9Uri", () => {
  it.each([
    [{ host: "broker", mailAddress: "agent.inbox" }, "mq9://broker/agent.inbox"],
    [{ host: "broker", port: 4332, mailAddress: "a" }, "mq9://broker/a"],
    [{ host: "broker", port: 7000, mailAddress: "a", tls: true }, "mq9s://broker:7000/a"],
    [{ host: "::1", port: 5000, mailAddress: "a" }, "mq9://[::1]:5000/a"],
    [{ host: "broker" }, "mq9://broker/"],
  ])("writes %j as %s and reads it back", (parts, uri) => {
    expect(formatMq9Uri(parts)).toBe(uri);
    const parsed = parseMq9Uri(uri);
    expect(parsed.host).toBe(parts.host);
    expect(parsed.mailAddress).toBe((parts as { mailAddress?: string }).mailAddress);
  });

  it("refuses a bad mail address", () => {
    expect(() => formatMq9Uri({ host: "b", mailAddress: "Bad Name" })).toThrow(/bad mail_address/);
  });
});

describe("send targets", () => {
  it.each([
    ["agent.inbox", "agent.inbox"],
    ["mq9://broker/agent.inbox", "agent.inbox"],
    ["mq9s://broker:9/x.y", "x.y"],
  ])("%s targets %s", (target, address) => {
    expect(targetAddress(target)).toBe(address);
  });

  it.each(["", "a b", "a.*", "a.>", "mq9://broker/"])("'%s' is refused before anything is sent", (target) => {
    expect(() => targetAddress(target)).toThrow(Mq9Error);
  });
});

describe("connection URLs", () => {
  it.each([
    ["mq9://127.0.0.1", { hostPort: "127.0.0.1:4332", tls: false }],
    ["mq9://h:1234/ignored.mailbox", { hostPort: "h:1234", tls: false }],
    ["mq9s://h", { hostPort: "h:4332", tls: true }],
    ["nats://h", { hostPort: "h:4222", tls: false }],
    ["tls://h:4443", { hostPort: "h:4443", tls: true }],
    ["h:9000", { hostPort: "h:9000", tls: false }],
    ["localhost", { hostPort: "localhost:4332", tls: false }],
    ["mq9://s3cret@h", { hostPort: "h:4332", tls: false, token: "s3cret" }],
    ["nats://agent:pa%40ss@h:1", { hostPort: "h:1", tls: false, user: "agent", password: "pa@ss" }],
    ["mq9://agent:@h", { hostPort: "h:4332", tls: false, user: "agent", password: "" }],
  ])("%s", (url, expected) => {
    expect(parseServerUrl(url)).toEqual(expected);
  });

  it.each(["http://h", "ws://h:80", "mq9://"])("refuses %s", (url) => {
    expect(() => parseServerUrl(url)).toThrow(Mq9Error);
  });
});
