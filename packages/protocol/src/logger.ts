/**
 * The structured logging surface the broker, the Agent SDK and the orchestrator take; pino
 * loggers satisfy it. Defined here, the one package they all depend on, so that there is one.
 */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
