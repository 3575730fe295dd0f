// The types a setting's value may have: each knows how it is written on the command line, how
// it is checked, and how the docs' table names it.
import { z } from "zod";
import type { ValueType } from "./setting.js";

const WHOLE_ABOVE_ZERO = "must be a whole number above 0";
const WHOLE_FROM_ZERO = "must be a whole number, 0 or more";

/** Free text, not empty. */
export const text = (): ValueType<string> => ({ kind: "text", schema: z.string().min(1), takes: "text" });

/** A secret: not empty, and `what` says why an empty one is refused. */
export const secretText = (emptyRefused: string): ValueType<string> => ({
  kind: "text",
  schema: z.string().min(1, emptyRefused),
  takes: "text",
});

/** Text that must match `pattern`, with `message` when it does not. */
export const matching = (
  pattern: (value: string) => boolean,
  message: string,
  takes: string,
): ValueType<string> => ({
  kind: "text",
  schema: z.string().refine(pattern, message),
  takes,
});

/** One of a fixed set of words. */
export const choice = <const T extends readonly [string, ...string[]]>(values: T): ValueType<T[number]> => ({
  kind: "text",
  schema: z.enum(values),
  takes: values.join(", "),
});

/** A whole number from `min` (0 or 1). */
export const whole = (min: 0 | 1): ValueType<number> => ({
  kind: "number",
  schema:
    min === 1
      ? z.number().int({ error: WHOLE_ABOVE_ZERO }).positive({ error: WHOLE_ABOVE_ZERO })
      : z.number().int({ error: WHOLE_FROM_ZERO }).min(0, { error: WHOLE_FROM_ZERO }),
  takes: min === 1 ? "whole number ≥ 1" : "whole number ≥ 0",
});

/** A TCP port; 0 asks the system for any free one. */
export const port = (): ValueType<number> => ({
  kind: "number",
  schema: z.number().int().min(0).max(65535),
  takes: "0–65535",
});

/** A number above 0, fractions allowed. */
export const positive = (): ValueType<number> => ({
  kind: "number",
  schema: z.number().positive(),
  takes: "number > 0",
});

/** A share from 0 to 1. */
export const share = (): ValueType<number> => ({
  kind: "number",
  schema: z.number().min(0).max(1),
  takes: "0–1",
});

/** A list: comma-separated on the command line, in a variable and (as well as an array) in the file. */
export const list = (): ValueType<string[]> => ({
  kind: "list",
  schema: z
    .union([z.string(), z.array(z.string().min(1))])
    .transform((v) => (Array.isArray(v) ? v : v.split(",")).map((s) => s.trim()).filter((s) => s !== "")),
  takes: "comma-separated list",
});

/** On or off: `--flag`, `--flag on|off`, true or false. */
export const onOff = (): ValueType<boolean> => ({
  kind: "switch",
  schema: z
    .union([z.boolean(), z.enum(["on", "off", "true", "false"])])
    .transform((v) => v === true || v === "on" || v === "true"),
  takes: "on or off",
});

/** Structured data (lists of objects): the config file only. */
export const structured = <T>(schema: z.ZodType<T>, takes: string): ValueType<T> => ({
  kind: "structured",
  schema,
  takes,
});

/** Text that may be empty (a prefix, a password a server accepts empty). */
export const anyText = (): ValueType<string> => ({ kind: "text", schema: z.string(), takes: "text" });
