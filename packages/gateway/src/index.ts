export { type A2AGatewayOptions, mountA2AGateway } from "./a2a-gateway.js";
export { cardEtag, gatewayCard } from "./gateway-card.js";
