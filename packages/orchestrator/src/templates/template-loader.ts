import { closestName, didYouMean, suggestion } from "@mq9/protocol";
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, type YAMLMap } from "yaml";
import { ConditionError, compileCondition } from "./condition.js";
import { topologicalOrder } from "./dag.js";
import { parseDuration } from "./duration.js";
import type { Performer, RetryPolicy, StepTemplate, TaskTemplate, TemplateProblem } from "./task-template.js";

const TEMPLATE_KEYS = new Set(["name", "task_type", "description", "timeout", "max_hops", "steps"]);
const STEP_KEYS = new Set([
  "id",
  "mode",
  "capability",
  "agent",
  "merge",
  "depends_on",
  "timeout",
  "retry",
  "optional",
  "when",
  "compensate",
]);
const NAME = /^[a-z0-9][a-z0-9_.-]*$/i;
const DEFAULT_MAX_HOPS = 16;

/** Collects problems with their position; every check reports instead of throwing. */
class Checker {
  readonly problems: TemplateProblem[] = [];
  constructor(
    private readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  report(node: Node | null | undefined, message: string, offset = 0): void {
    const at = (node?.range?.[0] ?? 0) + offset;
    const { line, col } = this.lines.linePos(at);
    this.problems.push({ file: this.file, line, column: col, message });
  }

  line(node: Node | null | undefined): number {
    return this.lines.linePos(node?.range?.[0] ?? 0).line;
  }

  string(map: YAMLMap, key: string, required: boolean, where: string): string | undefined {
    const node = map.get(key, true) as Node | undefined;
    if (node === undefined) {
      if (required) this.report(map, `${where}: '${key}' is required`);
      return undefined;
    }
    if (!isScalar(node) || typeof node.value !== "string" || node.value.trim() === "") {
      this.report(node, `${where}: '${key}' must be a non-empty string`);
      return undefined;
    }
    return node.value;
  }

  stringList(map: YAMLMap, key: string, where: string): string[] {
    const node = map.get(key, true) as Node | undefined;
    if (node === undefined) return [];
    if (isScalar(node) && typeof node.value === "string") return [node.value];
    if (!isSeq(node) || !node.items.every((item) => isScalar(item) && typeof item.value === "string")) {
      this.report(node, `${where}: '${key}' must be a step id or a list of step ids`);
      return [];
    }
    return node.items.map((item) => String((item as { value: unknown }).value));
  }

  duration(map: YAMLMap, key: string, where: string): number | undefined {
    const node = map.get(key, true) as Node | undefined;
    if (node === undefined) return undefined;
    const ms = isScalar(node) ? parseDuration(node.value) : undefined;
    if (ms === undefined) this.report(node, `${where}: '${key}' must be a duration like 500ms, 30s or 2m`);
    return ms;
  }

  /** Reports each key not in `allowed`; returns the keys the misspelt ones most likely meant. */
  unknownKeys(map: YAMLMap, allowed: Set<string>, where: string): Set<string> {
    const meant = new Set<string>();
    for (const pair of map.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : "";
      if (!allowed.has(key)) {
        const guess = closestName(key, allowed);
        if (guess) meant.add(guess);
        const hint = suggestion(guess) || ` (allowed: ${[...allowed].join(", ")})`;
        this.report(pair.key as Node, `${where}: unknown key '${key}'${hint}`);
      }
    }
    return meant;
  }
}

function performer(checker: Checker, map: YAMLMap, where: string): Performer | undefined {
  const agent = checker.string(map, "agent", false, where);
  const capability = checker.string(map, "capability", false, where);
  if (agent && capability) checker.report(map, `${where}: give either 'agent' or 'capability', not both`);
  if (agent) return { agent };
  if (capability) return { capability };
  return undefined;
}

function retryPolicy(checker: Checker, map: YAMLMap, where: string): RetryPolicy {
  const node = map.get("retry", true) as Node | undefined;
  if (node === undefined) return { count: 0, backoffMs: 0 };
  if (isScalar(node) && Number.isInteger(node.value) && (node.value as number) >= 0) {
    return { count: node.value as number, backoffMs: 500 };
  }
  if (!isMap(node)) {
    checker.report(node, `${where}: 'retry' must be a count or {count, backoff}`);
    return { count: 0, backoffMs: 0 };
  }
  const meant = checker.unknownKeys(node, new Set(["count", "backoff"]), `${where} retry`);
  const count = node.get("count", true) as Node | undefined;
  const value = isScalar(count) ? count.value : undefined;
  // A misspelt 'count' is reported once, as the typo it is.
  const typo = count === undefined && meant.has("count");
  if (!typo && (!Number.isInteger(value) || (value as number) < 0)) {
    checker.report(count ?? node, `${where}: 'retry.count' must be a whole number >= 0`);
  }
  return {
    count: Number.isInteger(value) ? (value as number) : 0,
    backoffMs: checker.duration(node, "backoff", where) ?? 500,
  };
}

function compensation(checker: Checker, map: YAMLMap, where: string): Performer | undefined {
  const node = map.get("compensate", true) as Node | undefined;
  if (node === undefined) return undefined;
  if (isScalar(node) && typeof node.value === "string" && node.value !== "") return { agent: node.value };
  if (isMap(node)) {
    const meant = checker.unknownKeys(node, new Set(["agent", "capability"]), `${where} compensate`);
    const found = performer(checker, node, `${where} compensate`);
    if (!found && meant.size === 0) {
      checker.report(node, `${where}: 'compensate' needs an 'agent' or a 'capability'`);
    }
    return found;
  }
  checker.report(node, `${where}: 'compensate' must be an agent name or {agent} / {capability}`);
  return undefined;
}

const MODES = ["pipeline", "fan_out", "merge"] as const;
type Mode = (typeof MODES)[number];

function readMode(checker: Checker, map: YAMLMap, where: string): Mode | undefined {
  const node = map.get("mode", true) as Node | undefined;
  if (node === undefined) return undefined;
  if (isScalar(node) && MODES.includes(node.value as Mode)) return node.value as Mode;
  const got = isScalar(node) ? String(node.value) : undefined;
  const hint = got === undefined ? "" : didYouMean(got, MODES);
  checker.report(
    node,
    `${where}: 'mode' must be ${MODES.join(", ")} (got '${got ?? "a list or map"}')${hint}`,
  );
  return undefined;
}

/**
 * One step. `previous` is the step before it in the file: a `mode: pipeline` step without
 * `depends_on` runs after it (the design's pipeline), while `fan_out` and steps without a
 * mode depend only on what they list.
 */
function readStep(
  checker: Checker,
  node: Node,
  index: number,
  previous: string | undefined,
): StepTemplate | undefined {
  if (!isMap(node)) {
    checker.report(node, `step ${index + 1} must be a mapping with an 'id'`);
    return undefined;
  }
  const id = checker.string(node, "id", true, `step ${index + 1}`);
  if (id === undefined) return undefined;
  const where = `step '${id}'`;
  if (!NAME.test(id))
    checker.report(node.get("id", true) as Node, `${where}: ids use letters, digits, '.', '_' and '-'`);
  const meant = checker.unknownKeys(node, STEP_KEYS, where);
  const mode = readMode(checker, node, where);
  const explicit = checker.stringList(node, "depends_on", where);
  let merge = node.has("merge") ? checker.stringList(node, "merge", where) : undefined;
  if (merge && mode !== undefined && mode !== "merge") {
    checker.report(
      node.get("mode", true) as Node,
      `${where}: a step with 'merge' has mode merge, not ${mode}`,
    );
  }
  if (mode === "merge" && !merge) {
    // The design's merge step names its inputs in depends_on.
    merge = explicit;
    if (explicit.length === 0) {
      checker.report(node, `${where}: a merge step lists the steps it merges in 'depends_on' (or 'merge')`);
    }
  }
  const work = performer(checker, node, where);
  if (merge && work) checker.report(node, `${where}: a merge step has no 'agent' or 'capability'`);
  // A misspelt 'capability' or 'agent' is reported once, as the typo it is.
  const typoOfWork = meant.has("capability") || meant.has("agent");
  if (!merge && !work && !typoOfWork) {
    checker.report(node, `${where}: needs an 'agent', a 'capability', or mode merge with 'depends_on'`);
  }
  if (merge && merge.length === 0 && mode !== "merge")
    checker.report(node, `${where}: 'merge' lists no steps`);
  let when: StepTemplate["when"];
  let whenReads: string[] = [];
  const whenNode = node.get("when", true) as Node | undefined;
  const whenSource = checker.string(node, "when", false, where);
  if (whenSource !== undefined) {
    try {
      const condition = compileCondition(whenSource);
      when = { source: whenSource, evaluate: condition.evaluate };
      whenReads = condition.steps;
    } catch (err) {
      if (!(err instanceof ConditionError)) throw err;
      // +1 skips a quote when the scalar is quoted; close enough to point at the spot.
      const quoted = isScalar(whenNode) && whenNode.type !== "PLAIN" ? 1 : 0;
      checker.report(whenNode, `${where}: bad 'when' condition: ${err.message}`, err.offset + quoted);
    }
  }
  const optionalNode = node.get("optional", true) as Node | undefined;
  if (optionalNode !== undefined && !(isScalar(optionalNode) && typeof optionalNode.value === "boolean")) {
    checker.report(optionalNode, `${where}: 'optional' must be true or false`);
  }
  // A step reads what it merges and what its condition looks at, so it runs after them.
  const implied = [...(merge ?? []), ...whenReads];
  if (mode === "pipeline" && !node.has("depends_on") && previous !== undefined) implied.push(previous);
  return {
    id,
    performer: work,
    merge,
    // The design's merge mode combines the inputs' fields into one object; `merge:` keeps them by step.
    mergeStyle: merge ? (mode === "merge" ? "fields" : "by_step") : undefined,
    dependsOn: [...new Set([...explicit, ...implied])],
    timeoutMs: checker.duration(node, "timeout", where),
    retry: retryPolicy(checker, node, where),
    optional: isScalar(optionalNode) && optionalNode.value === true,
    when,
    compensate: compensation(checker, node, where),
    line: checker.line(node),
  };
}

/** The task type: `name`, or `task_type` as the design writes it (both only when they agree). */
function templateName(checker: Checker, root: YAMLMap): string | undefined {
  const hasName = root.has("name");
  const hasType = root.has("task_type");
  if (!hasName && !hasType) {
    checker.report(root, "template: 'name' (or 'task_type') is required");
    return undefined;
  }
  const name = hasName ? checker.string(root, "name", true, "template") : undefined;
  const type = hasType ? checker.string(root, "task_type", true, "template") : undefined;
  if (name !== undefined && type !== undefined && name !== type) {
    checker.report(
      root.get("task_type", true) as Node,
      `template: 'name' (${name}) and 'task_type' (${type}) differ; give one of them`,
    );
  }
  return name ?? type;
}

/** Parses and validates one template file's text; problems carry file, line and column. */
export function parseTemplate(text: string, file: string): ParsedTemplate {
  const result = readTemplate(text, file);
  result.problems.sort((a, b) => a.line - b.line || a.column - b.column);
  return result;
}

type ParsedTemplate = { template?: TaskTemplate; problems: TemplateProblem[] };

function readTemplate(text: string, file: string): ParsedTemplate {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const checker = new Checker(file, lines);
  for (const error of doc.errors) {
    const { line, col } = lines.linePos(error.pos[0]);
    checker.problems.push({ file, line, column: col, message: `YAML: ${error.message.split("\n")[0]}` });
  }
  if (checker.problems.length > 0) return { problems: checker.problems };
  const root = doc.contents;
  if (!isMap(root)) {
    checker.report(root, "a template is a mapping with 'name' (or 'task_type') and 'steps'");
    return { problems: checker.problems };
  }
  checker.unknownKeys(root, TEMPLATE_KEYS, "template");
  const name = templateName(checker, root);
  const description = checker.string(root, "description", false, "template") ?? "";
  const timeoutMs = checker.duration(root, "timeout", "template");
  const hopsNode = root.get("max_hops", true) as Node | undefined;
  let maxHops = DEFAULT_MAX_HOPS;
  if (hopsNode !== undefined) {
    const value = isScalar(hopsNode) ? hopsNode.value : undefined;
    if (Number.isInteger(value) && (value as number) > 0) maxHops = value as number;
    else checker.report(hopsNode, "template: 'max_hops' must be a whole number > 0");
  }
  const stepsNode = root.get("steps", true) as Node | undefined;
  if (!isSeq(stepsNode) || stepsNode.items.length === 0) {
    checker.report(stepsNode ?? root, "template: 'steps' must be a non-empty list");
    return { problems: checker.problems };
  }
  const steps: StepTemplate[] = [];
  const seen = new Map<string, StepTemplate>();
  const stepNodes = new Map<string, Node>();
  stepsNode.items.forEach((item, index) => {
    const step = readStep(checker, item as Node, index, steps.at(-1)?.id);
    if (!step) return;
    if (seen.has(step.id)) {
      checker.report(
        item as Node,
        `step '${step.id}' is defined twice (first on line ${seen.get(step.id)!.line})`,
      );
      return;
    }
    seen.set(step.id, step);
    stepNodes.set(step.id, item as Node);
    steps.push(step);
  });
  for (const step of steps) {
    for (const dep of step.dependsOn) {
      if (seen.has(dep)) continue;
      const hint = didYouMean(dep, seen.keys());
      // A step the condition names is a dependency nobody wrote in depends_on: point at the condition.
      const node = stepNodes.get(step.id) as YAMLMap;
      if (step.when && compileCondition(step.when.source).steps.includes(dep)) {
        const at = node.get("when", true) as Node;
        checker.report(at, `step '${step.id}': its 'when' reads unknown step '${dep}'${hint}`);
      } else checker.report(node, `step '${step.id}' depends on unknown step '${dep}'${hint}`);
    }
  }
  if (checker.problems.length > 0) return { problems: checker.problems };
  const sorted = topologicalOrder(
    steps.map((s) => s.id),
    (id) => seen.get(id)!.dependsOn,
  );
  if ("cycle" in sorted) {
    const message = `steps depend on each other in a cycle: ${sorted.cycle.join(" -> ")}`;
    checker.report(stepNodes.get(sorted.cycle[0]), message);
    return { problems: checker.problems };
  }
  return {
    template: {
      name: name!,
      description,
      timeoutMs,
      maxHops,
      steps,
      order: sorted.order,
      file,
      source: text,
    },
    problems: checker.problems,
  };
}
