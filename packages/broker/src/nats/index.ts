export { NatsListener } from "./listener.js";
export type { Logger, NatsListenerOptions } from "./options.js";
