// Our broker again, exporting its spans over OTLP/HTTP (--otlp-endpoint) to a sink in this process
// (bench/otlp-sink.js): next to bench/mq9.js, what tracing costs SEND and drain. BENCH_OTLP=1 adds it.
import { startWith } from "./mq9.js";

export const id = "mq9-otlp";
export const label = "mq9, OTLP tracing on";
export const durability = "as mq9 (ours), with every request's spans exported over OTLP/HTTP";

export function start(cfg) {
  return startWith(cfg, { permissions: false, otlp: true });
}
