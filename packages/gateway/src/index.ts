/**
 * `@mq9/gateway` — the A2A HTTP gateway: every A2A agent on an mq9 mailbox, reachable by plain
 * A2A HTTP clients at `<prefix>/<agent>` (card at `<prefix>/<agent>/.well-known/agent-card.json`).
 * It reaches the agents through the client SDK only.
 *
 * @example
 * ```ts
 * import { connect } from "@mq9/client";
 * import { mountA2AGateway } from "@mq9/gateway";
 * import Fastify from "fastify";
 *
 * const app = Fastify();
 * await mountA2AGateway(app, { client: () => connect("mq9://127.0.0.1:4332") });
 * await app.listen({ port: 8080 }); // A2A clients call http://127.0.0.1:8080/a2a/<agent>
 * ```
 */
export { type A2AGatewayOptions, mountA2AGateway } from "./a2a-gateway.js";
export { cardEtag, gatewayCard } from "./gateway-card.js";
