// How a setting reads in `mq9 serve --help` and in docs/configuration.md's table.
import type { Setting } from "./setting.js";

const DAY = 86_400;

/** The default as a person reads it ("604800 (7 days)", "on"), or undefined when there is none. */
export function defaultText(setting: Setting): string | undefined {
  if (setting.defaultText !== undefined) return setting.defaultText;
  const value = setting.default;
  if (value === undefined) return undefined;
  if (typeof value === "boolean") return value ? "on" : "off";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.join(",");
  if (typeof value === "number" && setting.unit === "seconds" && value >= DAY && value % DAY === 0) {
    const days = value / DAY;
    return `${value} (${days} day${days === 1 ? "" : "s"})`;
  }
  return String(value);
}

/** The help line of a flag: what it does, its unit and default, its variable. */
export function helpLine(setting: Setting): string {
  const notes = [setting.unit, defaultText(setting) && `default ${defaultText(setting)}`].filter(Boolean);
  return `${setting.help}${notes.length > 0 ? ` (${notes.join("; ")})` : ""} (env ${setting.env})`;
}

/** The flag as commander declares it: `--port <n>`, `--cluster [on|off]`. */
export function flagSyntax(setting: Setting): string {
  const value = { text: "<value>", number: "<n>", list: "<list>", switch: "[on|off]", structured: "" }[
    setting.type.kind
  ];
  return `--${setting.flag} ${value}`.trim();
}
