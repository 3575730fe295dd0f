// A nats-server newer than Debian's (2.9.10), for the tests of features it lacks: `.ci/run`
// installs it with `go install` into the cache below; tests find it here.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The pinned release: the first with `$SYS.REQ.SERVER.<id>.KICK` is 2.10.0; this is a current one. */
export const PINNED_NATS_SERVER_VERSION = "v2.14.10";

/** Where the pinned nats-server is (MQ9_PINNED_NATS_SERVER, else the cache `.ci/run` fills). */
export function pinnedNatsServer(): string {
  return (
    process.env.MQ9_PINNED_NATS_SERVER ??
    join(homedir(), ".cache/mq9/nats-server", PINNED_NATS_SERVER_VERSION, "nats-server")
  );
}

/** Why the pinned nats-server cannot be used here, or undefined; with CI set a missing one fails. */
export function pinnedNatsServerMissing(): string | undefined {
  if (existsSync(pinnedNatsServer())) return undefined;
  const reason = `nats-server ${PINNED_NATS_SERVER_VERSION} not found at ${pinnedNatsServer()} (GOBIN=$(dirname ${pinnedNatsServer()}) go install github.com/nats-io/nats-server/v2@${PINNED_NATS_SERVER_VERSION}, as .ci/run does)`;
  if (process.env.CI) throw new Error(`CI: ${reason}`);
  return reason;
}
