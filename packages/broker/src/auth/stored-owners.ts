import type { Logger } from "../logger.js";
import type { Registry } from "../registry.js";
import type { Store } from "../store/store.js";
import { canInspect } from "../store/store-inspection.js";
import type { UserDirectory } from "./user-directory.js";

/** Mailboxes and registrations named in a start-time message, per owner. */
const EXAMPLES = 5;

/** The names mq9 gave token users without `user` before names were derived from the token. */
const POSITIONAL_NAME = /^token-user-\d+$/;

function describe(count: number, names: string[], kind: string): string {
  const more = count > names.length ? ` and ${count - names.length} more` : "";
  return `${count} ${kind}${count === 1 ? "" : "s"} (${names.join(", ")}${more})`;
}

/**
 * Checks, at start, the owners stored with mailboxes and registrations against the configured
 * users. Owners are user names, so a users list edited around a user never hands its mailboxes to
 * another; what a name that left the list owned stays unreachable but to admins (logged). One case
 * is refused: mailboxes owned by `token-user-<n>`, the name an older mq9 gave the nameless token
 * user at position n, while nameless token users are configured: which of them it was cannot be
 * told, so the administrator names it.
 */
export async function checkStoredOwners(
  users: UserDirectory | undefined,
  store: Store,
  registry: Registry | undefined,
  logger: Logger,
): Promise<void> {
  if (users?.multiUser !== true) return;
  // Per owner, what it owns, as the messages below name it.
  const owned = new Map<string, string[]>();
  const note = (owner: string, what: string) => owned.set(owner, [...(owned.get(owner) ?? []), what]);
  if (canInspect(store)) {
    for (const o of await store.mailboxOwners(Date.now(), EXAMPLES)) {
      note(o.owner, describe(o.count, o.addresses, "mailbox"));
    }
  }
  for (const o of (await registry?.owners(EXAMPLES)) ?? []) {
    note(o.owner, describe(o.count, o.mailboxes, "registration"));
  }
  const gone = [...owned.keys()].filter((owner) => !users.has(owner));
  const positional = gone.filter((owner) => POSITIONAL_NAME.test(owner));
  if (positional.length > 0 && users.hasNamelessTokenUsers) {
    const lines = positional.map((owner) => `${owner} owns ${owned.get(owner)!.join(" and ")}`);
    throw new Error(
      `auth: ${lines.join("; ")}. These names were given by list position to token users without a "user" name; such users are now named from their token, so these would be reachable by no one, and a name by position could hand them to another user. Add "user": "${positional[0]}" (and so on) to the auth.users entry that was at that position when they were created (counting from 0), or give every token user a "user" name to leave them to admins (docs/security.md, Identities)`,
    );
  }
  for (const owner of gone) {
    logger.warn(
      { owner, owned: owned.get(owner) },
      "auth: a user no longer configured owns mailboxes or registrations; only admins reach them until a user of that name is configured again",
    );
  }
}
