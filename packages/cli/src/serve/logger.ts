import type { Logger } from "@mq9/broker";
import pino from "pino";
import pretty from "pino-pretty";
import type { ServeConfig } from "./config.js";

/** pino logger: readable lines by default, one JSON object per line with `--log-format json`. */
export function createLogger(log: ServeConfig["log"]): Logger {
  if (log.format === "json") return pino({ level: log.level, base: { service: "mq9" } });
  const stream = pretty({
    colorize: Boolean(process.stdout.isTTY),
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname",
    sync: true,
  });
  return pino({ level: log.level }, stream);
}
