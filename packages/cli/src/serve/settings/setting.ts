// What one setting of `mq9 serve` is: declared once, in settings.ts, and everything else — the
// flags, the MQ9_* variables, the config file's schema, the components' options, the help and
// the table in docs/configuration.md — is derived from that declaration.
import type { z } from "zod";

/** How a value is written on the command line and in an MQ9_* variable. */
export type Kind = "text" | "number" | "list" | "switch" | "structured";

/** The unit a number is counted in, shown in help and in the docs. */
export type Unit = "seconds" | "milliseconds" | "bytes";

/** The part of `mq9 serve` that reads a setting. */
export type Component = "broker" | "registry" | "orchestrator" | "cluster" | "log";

/** The type of a setting's value: how it is written, how it is checked, how the docs name it. */
export interface ValueType<Out = unknown> {
  kind: Kind;
  schema: z.ZodType<Out>;
  /** "a whole number ≥ 1", "normal or full", …: what the docs' table says it takes. */
  takes: string;
}

/** One setting, as settings.ts declares it. */
export interface SettingSpec<Out = unknown> {
  type: ValueType<Out>;
  /** The value when none is given; leave out for "none". */
  default?: Out;
  /** How help and the docs say the default when it is not a plain value ("--host"). */
  defaultText?: string;
  /**
   * The default is filled in after the cross-setting checks, so that those can tell a value given
   * from the default (the SQLite settings are refused on PostgreSQL only when given).
   */
  defaultAfterChecks?: true;
  unit?: Unit;
  /** The command-line flag, without "--"; a structured (file-only) setting has none. */
  flag?: string;
  /** The environment variable; MQ9_ and the flag in upper snake case unless given. */
  env?: string;
  help: string;
  reads: Component;
  /**
   * The component option it feeds, a dot path ("onnx.pooling"); its own name unless given;
   * `false` where serve composes the option from several settings (TLS files, credentials).
   */
  option?: string | false;
  /** Converts the value into the option's unit (seconds to milliseconds). */
  toOption?(value: Out): unknown;
  /** Never echoed in errors or logs. */
  secret?: true;
}

/** A declared setting with its place in the config file. */
export interface Setting<Out = unknown> extends SettingSpec<Out> {
  /** The config file's key: "server.port". */
  key: string;
  section: string;
  name: string;
  env?: string;
}

/** Declares a setting (see settings.ts); the return keeps its value type for the config's type. */
export function setting<Out, Spec extends SettingSpec<Out>>(spec: Spec & SettingSpec<Out>): Spec {
  return spec;
}

/** The environment variable of a flag: MQ9_ and the flag in upper snake case. */
export function envOf(flag: string): string {
  return `MQ9_${flag.toUpperCase().replace(/-/g, "_")}`;
}

/** The settings of a table, each with its key, section, name and variable filled in. */
export function listSettings(table: Record<string, Record<string, SettingSpec>>): Setting[] {
  return Object.entries(table).flatMap(([section, settings]) =>
    Object.entries(settings).map(([name, spec]) => ({
      ...spec,
      key: `${section}.${name}`,
      section,
      name,
      env: spec.env ?? (spec.flag === undefined ? undefined : envOf(spec.flag)),
    })),
  );
}

/** The value of a setting in a config, read by its section and name. */
export function settingValue(config: object, setting: Setting): unknown {
  return (config as Record<string, Record<string, unknown>>)[setting.section]?.[setting.name];
}

type Declared = Record<string, Record<string, SettingSpec>>;
type ValueOf<S> = S extends { type: ValueType<infer Out> }
  ? S extends { default: unknown }
    ? Out
    : Out | undefined
  : never;

/** The validated configuration a table of settings describes: each section an object of values. */
export type ConfigOf<T extends Declared> = { [S in keyof T]: { [K in keyof T[S]]: ValueOf<T[S][K]> } };
