export { NatsListener } from "./listener.js";
export type { Logger, NatsListenerOptions, ServiceHandler, ServiceRequest } from "./options.js";
