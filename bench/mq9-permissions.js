// Our broker again, with users configured: the bench client is a user with the agent profile, so
// every PUB and SUB is checked against its permissions and every reply is routed to its requester
// alone. The SEND figures next to bench/mq9.js show what isolation between clients costs.
import { startWith } from "./mq9.js";

export const id = "mq9-perms";
export const label = "mq9, users + permissions";
export const durability = "as mq9 (ours), with a users list and the agent permission profile";

export function start(cfg) {
  return startWith(cfg, { permissions: true });
}
