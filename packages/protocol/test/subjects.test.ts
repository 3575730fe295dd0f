import { describe, expect, it } from "vitest";
import { isMq9Subject, parseMq9Subject, Subjects } from "../src/subjects.js";

describe("parseMq9Subject", () => {
  it("reads every subject the Subjects table builds", () => {
    expect(parseMq9Subject(Subjects.mailboxCreate)).toEqual({ op: "mailbox.create" });
    expect(parseMq9Subject(Subjects.send("a.b-c"))).toEqual({ op: "msg.send", mailAddress: "a.b-c" });
    expect(parseMq9Subject(Subjects.fetch("box"))).toEqual({ op: "msg.fetch", mailAddress: "box" });
    expect(parseMq9Subject(Subjects.ack("box"))).toEqual({ op: "msg.ack", mailAddress: "box" });
    expect(parseMq9Subject(Subjects.query("box"))).toEqual({ op: "msg.query", mailAddress: "box" });
    expect(parseMq9Subject(Subjects.delete("a.b", 42))).toEqual({
      op: "msg.delete",
      mailAddress: "a.b",
      msgIdToken: "42",
    });
    expect(parseMq9Subject(Subjects.agentRegister)).toEqual({ op: "agent.register" });
    expect(parseMq9Subject(Subjects.agentUnregister)).toEqual({ op: "agent.unregister" });
    expect(parseMq9Subject(Subjects.agentReport)).toEqual({ op: "agent.report" });
    expect(parseMq9Subject(Subjects.agentDiscover)).toEqual({ op: "agent.discover" });
  });

  it("names no command for unknown verbs, missing targets and names that only look alike", () => {
    for (const subject of [
      "$mq9.AI",
      "$mq9.AI.",
      "$mq9.AI.MSG",
      "$mq9.AI.MSG.",
      "$mq9.AI.MSG.SEND",
      "$mq9.AI.MSG.SEND.",
      "$mq9.AI.MSG..box",
      "$mq9.AI.MSG.SENDX.box",
      "$mq9.AI.MSG.SEN.box",
      "$mq9.AI.MSG.send.box",
      "$mq9.AI.MSG.DELETE.box",
      "$mq9.AI.MSG.DELETE.box.",
      "$mq9.AI.MAILBOX.CREATE.x",
      "$mq9.AI.MAILBOX.INFO",
      "$mq9.AI.MAILBOX.INFO.",
      "$mq9.AI.MAILBOX.LIST.x",
      "$mq9.AI.GROUP.RESET",
      "$mq9.AI.SERVER.INFO.x",
      "$mq9.AI.toString",
      "$mq9.AI.constructor",
      "$mq9.AIMSG.SEND.box",
      "mq9.AI.MSG.SEND.box",
    ]) {
      expect(parseMq9Subject(subject), subject).toBeUndefined();
    }
  });

  it("parses the operators' extensions; the mail address is everything after the verb", () => {
    expect(parseMq9Subject(Subjects.mailboxList)).toEqual({ op: "mailbox.list" });
    expect(parseMq9Subject(Subjects.serverInfo)).toEqual({ op: "server.info" });
    const cases = [
      [Subjects.mailboxInfo("a.b.dlq"), "mailbox.info"],
      [Subjects.mailboxPurge("a.b"), "mailbox.purge"],
      [Subjects.mailboxRemove("a"), "mailbox.remove"],
      [Subjects.groupList("a.b"), "group.list"],
      [Subjects.groupInfo("a.b"), "group.info"],
      [Subjects.groupReset("a.b"), "group.reset"],
      [Subjects.groupRelease("a.b"), "group.release"],
      [Subjects.nak("a.b"), "msg.nak"],
      [Subjects.retry("a.b.dlq"), "msg.retry"],
    ] as const;
    for (const [subject, op] of cases) {
      const mailAddress = subject.split(".").slice(4).join(".");
      expect(parseMq9Subject(subject), subject).toEqual({ op, mailAddress });
    }
  });

  it("leaves the superseded protocol's mailbox subjects unanswered, so no old client removes a mailbox", () => {
    // `MAILBOX.DELETE.<mail_id>.<msg_id>` deleted one message; `MAILBOX.LIST.<mail_id>` listed them.
    expect(parseMq9Subject("$mq9.AI.MAILBOX.DELETE.orders.1")).toBeUndefined();
    expect(parseMq9Subject("$mq9.AI.MAILBOX.LIST.orders")).toBeUndefined();
  });

  it("isMq9Subject claims the prefix and everything under it, nothing else", () => {
    expect(isMq9Subject("$mq9.AI")).toBe(true);
    expect(isMq9Subject("$mq9.AI.anything")).toBe(true);
    expect(isMq9Subject("$mq9.AIX")).toBe(false);
    expect(isMq9Subject("_INBOX.x")).toBe(false);
  });
});
