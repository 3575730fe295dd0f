/**
 * `when` conditions: a small, side-effect-free expression language over the
 * outputs of earlier steps, e.g. `outputs.quality.score >= 0.7 && !outputs.lint.failed`.
 * Grammar: or := and ("||" and)* ; and := not ("&&" not)* ; not := "!" not | cmp ;
 * cmp := value (("=="|"!="|">="|"<="|">"|"<") value)? ; value := literal | path | "(" or ")".
 * Paths start with `outputs.<step>` or `payload`; literals are numbers, 'strings', "strings",
 * true, false and null.
 */
export type Condition = (scope: ConditionScope) => boolean;

export interface ConditionScope {
  payload: unknown;
  outputs: Record<string, unknown>;
}

export class ConditionError extends Error {
  constructor(
    message: string,
    /** Offset in the expression where the problem is. */
    readonly offset: number,
  ) {
    super(message);
    this.name = "ConditionError";
  }
}

type Token = { kind: "num" | "str" | "id" | "op" | "end"; text: string; value?: unknown; at: number };
type Node = (scope: ConditionScope) => unknown;

const opPattern = /^(==|!=|>=|<=|&&|\|\||[><!().])/;

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const rest = source.slice(i);
    const space = /^\s+/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    const num = /^-?\d+(\.\d+)?/.exec(rest);
    if (num) {
      tokens.push({ kind: "num", text: num[0], value: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    const quote = rest[0];
    if (quote === "'" || quote === '"') {
      const end = source.indexOf(quote, i + 1);
      if (end < 0) throw new ConditionError("unterminated string", i);
      tokens.push({ kind: "str", text: source.slice(i, end + 1), value: source.slice(i + 1, end), at: i });
      i = end + 1;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(rest);
    if (id) {
      tokens.push({ kind: "id", text: id[0], at: i });
      i += id[0].length;
      continue;
    }
    const op = opPattern.exec(rest);
    if (op) {
      tokens.push({ kind: "op", text: op[0], at: i });
      i += op[0].length;
      continue;
    }
    throw new ConditionError(`unexpected character '${rest[0]}'`, i);
  }
  tokens.push({ kind: "end", text: "end of expression", at: source.length });
  return tokens;
}

const comparisons: Record<string, (a: unknown, b: unknown) => boolean> = {
  "==": (a, b) => a === b,
  "!=": (a, b) => a !== b,
  ">=": (a, b) => typeof a === typeof b && (a as number) >= (b as number),
  "<=": (a, b) => typeof a === typeof b && (a as number) <= (b as number),
  ">": (a, b) => typeof a === typeof b && (a as number) > (b as number),
  "<": (a, b) => typeof a === typeof b && (a as number) < (b as number),
};

/** Compiles a condition; throws ConditionError with the offset of the first problem. */
export function compileCondition(source: string): { evaluate: Condition; steps: string[] } {
  const tokens = tokenize(source);
  const steps = new Set<string>();
  let pos = 0;
  const peek = () => tokens[pos];
  const take = () => tokens[pos++];
  const expect = (text: string) => {
    const token = take();
    if (token.text !== text)
      throw new ConditionError(`expected '${text}' but found '${token.text}'`, token.at);
  };

  const path = (first: Token): Node => {
    if (first.text !== "outputs" && first.text !== "payload") {
      const literal: Record<string, unknown> = { true: true, false: false, null: null };
      if (first.text in literal) return () => literal[first.text];
      throw new ConditionError(
        `unknown name '${first.text}': paths start with outputs.<step> or payload`,
        first.at,
      );
    }
    const keys: string[] = [];
    while (peek().text === ".") {
      take();
      const key = take();
      if (key.kind !== "id" && key.kind !== "num")
        throw new ConditionError("expected a name after '.'", key.at);
      keys.push(key.text);
    }
    if (first.text === "outputs") {
      if (keys.length === 0) throw new ConditionError("outputs needs a step name: outputs.<step>", first.at);
      steps.add(keys[0]);
    }
    const root = first.text;
    return (scope) =>
      keys.reduce<unknown>(
        (value, key) => (value as Record<string, unknown> | null)?.[key],
        scope[root as keyof ConditionScope],
      );
  };

  const value = (): Node => {
    const token = take();
    if (token.kind === "num" || token.kind === "str") return () => token.value;
    if (token.kind === "id") return path(token);
    if (token.text === "(") {
      const inner = or();
      expect(")");
      return inner;
    }
    throw new ConditionError(`unexpected '${token.text}'`, token.at);
  };
  const comparison = (): Node => {
    const left = value();
    const op = peek();
    const compare = comparisons[op.text];
    if (!compare) return left;
    take();
    const right = value();
    return (scope) => compare(left(scope), right(scope));
  };
  const not = (): Node => {
    if (peek().text !== "!") return comparison();
    take();
    const inner = not();
    return (scope) => !inner(scope);
  };
  const and = (): Node => {
    let left = not();
    while (peek().text === "&&") {
      take();
      const l = left;
      const r = not();
      left = (scope) => Boolean(l(scope)) && Boolean(r(scope));
    }
    return left;
  };
  const or = (): Node => {
    let left = and();
    while (peek().text === "||") {
      take();
      const l = left;
      const r = and();
      left = (scope) => Boolean(l(scope)) || Boolean(r(scope));
    }
    return left;
  };

  const root = or();
  if (peek().kind !== "end") throw new ConditionError(`unexpected '${peek().text}'`, peek().at);
  return { evaluate: (scope) => Boolean(root(scope)), steps: [...steps] };
}
