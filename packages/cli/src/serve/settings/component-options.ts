import { type Component, type Setting, settingValue } from "./setting.js";

/**
 * The options a component takes, from the settings that declare it their reader: each value under
 * its option's name (a dot path nests it), converted where the setting says so. Settings whose
 * option serve composes from several (`option: false`) and values not given are left out.
 */
export function optionsFor(
  component: Component,
  config: object,
  settings: readonly Setting[],
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const setting of settings) {
    if (setting.reads !== component || setting.option === false) continue;
    const value = settingValue(config, setting);
    if (value === undefined) continue;
    const path = (setting.option ?? setting.name).split(".");
    let at = options;
    for (const part of path.slice(0, -1)) {
      at[part] ??= {};
      at = at[part] as Record<string, unknown>;
    }
    at[path[path.length - 1]] = setting.toOption ? setting.toOption(value) : value;
  }
  return options;
}
