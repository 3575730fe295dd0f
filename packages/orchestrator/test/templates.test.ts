import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  compileCondition,
  formatProblem,
  loadTemplateFolder,
  parseDuration,
  parseTemplate,
  TemplateSet,
} from "../src/index.js";

const contentAnalysis = `name: content-analysis
description: summarize, extract keywords and check quality in parallel, then merge
timeout: 2m
steps:
  - id: summarize
    capability: summarize
  - id: keywords
    capability: extract_keywords
    retry: { count: 2, backoff: 200ms }
  - id: quality
    capability: check_quality
    optional: true
    timeout: 5s
  - id: report
    merge: [summarize, keywords, quality]
  - id: publish
    agent: publisher
    when: "outputs.quality.score >= 0.5 && payload.publish == true"
    compensate: { capability: unpublish }
`;

const problemsOf = (text: string) => parseTemplate(text, "t.yaml").problems.map(formatProblem);

describe("task templates", () => {
  it("loads a fan-out with merge, retry, optional, timeout, when and compensate", () => {
    const { template, problems } = parseTemplate(contentAnalysis, "content.yaml");
    expect(problems).toEqual([]);
    expect(template).toMatchObject({ name: "content-analysis", timeoutMs: 120_000, maxHops: 16 });
    const step = (id: string) => template!.steps.find((s) => s.id === id)!;
    expect(step("keywords").retry).toEqual({ count: 2, backoffMs: 200 });
    expect(step("quality")).toMatchObject({
      optional: true,
      timeoutMs: 5000,
      performer: { capability: "check_quality" },
    });
    expect(step("report")).toMatchObject({
      merge: ["summarize", "keywords", "quality"],
      performer: undefined,
    });
    expect(step("report").dependsOn).toEqual(["summarize", "keywords", "quality"]);
    expect(step("publish").dependsOn).toEqual(["quality"]);
    expect(step("publish").compensate).toEqual({ capability: "unpublish" });
    expect(step("publish").line).toBe(16);
    const order = template!.order;
    expect(order.indexOf("report")).toBeGreaterThan(order.indexOf("quality"));
    expect(order.indexOf("publish")).toBeGreaterThan(order.indexOf("quality"));
  });

  it("refuses a cycle at load, naming the steps and the line", () => {
    const text = `name: loop
steps:
  - id: a
    agent: x
    depends_on: c
  - id: b
    agent: y
    depends_on: [a]
  - id: c
    agent: z
    depends_on: [b]
`;
    expect(problemsOf(text)).toEqual(["t.yaml:3:5: steps depend on each other in a cycle: a -> c -> b -> a"]);
  });

  it("reports every problem with its line and column", () => {
    const text = `name: broken
stepz: []
steps:
  - id: one
    capability: a
    agent: b
  - id: two
    depends_on: [three]
    agent: x
    timeout: soon
  - id: one
    agent: again
  - id: four
    agent: q
    when: "outputs.two.score >> 3"
`;
    expect(problemsOf(text)).toEqual([
      "t.yaml:2:1: template: unknown key 'stepz'; did you mean 'steps'?",
      "t.yaml:4:5: step 'one': give either 'agent' or 'capability', not both",
      "t.yaml:7:5: step 'two' depends on unknown step 'three'",
      "t.yaml:10:14: step 'two': 'timeout' must be a duration like 500ms, 30s or 2m",
      "t.yaml:11:5: step 'one' is defined twice (first on line 4)",
      "t.yaml:15:31: step 'four': bad 'when' condition: unexpected '>'",
    ]);
  });

  it("reports YAML syntax errors with their position", () => {
    const [problem] = problemsOf("name: x\nsteps:\n  - id: a\n   agent: [unclosed\n");
    expect(problem).toMatch(/^t\.yaml:\d+:\d+: YAML: /);
  });

  it("requires a name and steps, and work for each step", () => {
    expect(problemsOf("description: nothing\n")).toEqual([
      "t.yaml:1:1: template: 'name' (or 'task_type') is required",
      "t.yaml:1:1: template: 'steps' must be a non-empty list",
    ]);
    expect(problemsOf("name: x\nsteps:\n  - id: lazy\n")).toEqual([
      "t.yaml:3:5: step 'lazy': needs an 'agent', a 'capability', or mode merge with 'depends_on'",
    ]);
  });

  it("a folder loads each good file and reports the broken ones; a reload keeps the last good version", () => {
    const dir = mkdtempSync(join(tmpdir(), "mq9-templates-"));
    writeFileSync(join(dir, "content.yaml"), contentAnalysis);
    writeFileSync(join(dir, "other.yml"), "name: other\nsteps:\n  - id: a\n    agent: x\n");
    writeFileSync(join(dir, "notes.txt"), "ignored");
    const seen: string[] = [];
    const set = new TemplateSet({ folder: dir, onProblems: (p) => seen.push(...p.map(formatProblem)) });
    expect(set.names()).toEqual(["content-analysis", "other"]);
    writeFileSync(join(dir, "other.yml"), "name: other\nsteps:\n  - id: a\n");
    expect(set.reload()).toHaveLength(1);
    expect(set.get("other")?.steps[0].performer).toEqual({ agent: "x" });
    writeFileSync(join(dir, "other.yml"), "name: other\nsteps:\n  - id: b\n    agent: y\n");
    expect(set.reload()).toEqual([]);
    expect(set.get("other")?.steps[0].id).toBe("b");
    expect(seen).toEqual([
      `${join(dir, "other.yml")}:3:5: step 'a': needs an 'agent', a 'capability', or mode merge with 'depends_on'`,
    ]);
    set.close();
    expect(loadTemplateFolder(join(dir, "missing")).problems[0].message).toMatch(
      /cannot read the templates folder/,
    );
  });
});

describe("when conditions", () => {
  const scope = {
    payload: { lang: "en", n: 3 },
    outputs: { quality: { score: 0.8, flags: ["ok"] }, lint: { failed: false } },
  };
  it.each([
    ["outputs.quality.score >= 0.7", true],
    ["outputs.quality.score < 0.7", false],
    ["payload.lang == 'en' && !outputs.lint.failed", true],
    ['payload.lang == "fr" || payload.n > 2', true],
    ["!(payload.n == 3)", false],
    ["outputs.missing.value == null", false],
    ["outputs.missing", false],
    ["outputs.quality.flags.0 == 'ok'", true],
  ])("%s is %s", (source, expected) => {
    expect(compileCondition(source).evaluate(scope)).toBe(expected);
  });

  it("lists the steps it reads and refuses unknown names", () => {
    expect(compileCondition("outputs.a.x > 1 || outputs.b == 'y'").steps).toEqual(["a", "b"]);
    expect(() => compileCondition("process.exit()")).toThrow(/unknown name 'process'/);
    expect(() => compileCondition("payload.a ==")).toThrow(/unexpected 'end of expression'/);
  });
});

describe("durations", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["2m", 120_000],
    ["1.5s", 1500],
    [3, 3000],
    ["soon", undefined],
    [-1, undefined],
  ])("%s is %s ms", (value, ms) => {
    expect(parseDuration(value)).toBe(ms);
  });
});
