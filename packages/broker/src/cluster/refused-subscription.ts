import type { Logger } from "../logger.js";

/** Where an operator finds the permissions a node's NATS user needs. */
export const PERMISSIONS_HINT =
  "give the node's NATS user the permissions of docs/cluster.md (Subject permissions)";

/**
 * Logs a subscription the nats-server refused (its permissions deny the node the subject; the
 * client then closes the subscription). Without this the refusal reaches only the subscription's
 * callback, and a node would run on without, say, ever receiving a request.
 */
export function logRefusedSubscription(
  logger: Logger,
  subject: string,
  err: Error,
  consequence: string,
): void {
  logger.error(
    `nats: the cluster refused this node's subscription to ${subject} (${err.message}): ${consequence}; ${PERMISSIONS_HINT}`,
  );
}
