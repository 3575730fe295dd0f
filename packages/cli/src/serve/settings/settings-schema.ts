import { z } from "zod";
import type { Setting, SettingSpec } from "./setting.js";

type Table = Record<string, Record<string, SettingSpec>>;

/**
 * The config file's schema, derived from a table of settings: a strict object per section,
 * each setting with its type and default (or optional, where it has none or gets it later).
 */
export function schemaOf(table: Table): z.ZodObject {
  const sections: Record<string, z.ZodType> = {};
  for (const [section, settings] of Object.entries(table)) {
    const fields: Record<string, z.ZodType> = {};
    for (const [name, spec] of Object.entries(settings)) {
      const schema = spec.type.schema as z.ZodType;
      fields[name] =
        spec.default !== undefined && !spec.defaultAfterChecks
          ? schema.default(spec.default)
          : schema.optional();
    }
    sections[section] = z.object(fields).strict().prefault({});
  }
  return z.object(sections).strict();
}

/** Fills the defaults kept back for the cross-setting checks (SettingSpec.defaultAfterChecks). */
export function withLateDefaults<T extends object>(config: T, settings: readonly Setting[]): T {
  const filled = { ...config } as Record<string, Record<string, unknown>>;
  for (const setting of settings) {
    if (!setting.defaultAfterChecks || filled[setting.section][setting.name] !== undefined) continue;
    filled[setting.section] = { ...filled[setting.section], [setting.name]: setting.default };
  }
  return filled as T;
}
