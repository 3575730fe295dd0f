import type { Principal } from "../auth/principal.js";

/** The mq9 request subjects, as clients publish them. */
const MQ9_SUBJECTS = "$mq9.AI.>";

/**
 * The name of requests from inside the nodes' own NATS account (the nodes' in-process apps: MCP,
 * A2A gateway, orchestrator): the same admin name as one broker's internal user.
 */
export const NODE_ACCOUNT_PRINCIPAL: Principal = { name: "mq9-internal", admin: true, mailboxGrants: [] };

/**
 * How cluster nodes learn who sent a request: `account-prefix`: the nodes live in a NATS account
 * of their own that exports `<user>.$mq9.AI.>` to that user's account alone, and each user's
 * account imports it as `$mq9.AI.>` (docs/cluster.md, "One NATS account per user"). Only the
 * nats-servers' configuration puts the prefix there, so it names the requester.
 */
export interface ClusterIdentity {
  kind: "account-prefix";
  /** Prefixes (accounts) whose requests may act on every mailbox and registration, as admins. */
  admins?: readonly string[];
}

/** A request's subject as the service reads it, and who sent it. */
export interface IdentifiedSubject {
  subject: string;
  principal?: Principal;
  /** The request came through another account's service import. */
  imported: boolean;
  /** Why the request is refused unread, when it is. */
  refusal?: string;
}

/** A subject a node takes requests on; `prefixed`: its first token names the requester. */
export interface RequestSubject {
  subject: string;
  prefixed: boolean;
}

/**
 * Turns the subjects a node receives into mq9 subjects and principals. Without an identity the
 * node serves `$mq9.AI.>` as before and learns no one. With `account-prefix` it serves
 * `<prefix>.$mq9.AI.>` (the users' accounts, through their imports) and `$mq9.AI.>` (its own
 * account: the nodes' apps, which act as admins).
 */
export class AccountIdentity {
  private readonly admins: ReadonlySet<string>;

  constructor(private readonly identity: ClusterIdentity | undefined) {
    this.admins = new Set(identity?.admins ?? []);
  }

  /** Whether the service must enforce ownership: the nodes know who asked. */
  get isolates(): boolean {
    return this.identity !== undefined;
  }

  /** The subjects the node takes requests on. */
  subjects(): RequestSubject[] {
    const own = { subject: MQ9_SUBJECTS, prefixed: false };
    return this.identity ? [{ subject: `*.${MQ9_SUBJECTS}`, prefixed: true }, own] : [own];
  }

  /** The mq9 subject and requester of a message received on one of subjects(). */
  identify(subject: string, prefixed: boolean): IdentifiedSubject {
    if (!prefixed) {
      return { subject, principal: this.identity ? NODE_ACCOUNT_PRINCIPAL : undefined, imported: false };
    }
    const dot = subject.indexOf(".");
    const name = subject.slice(0, dot);
    const rest = subject.slice(dot + 1);
    if (name === NODE_ACCOUNT_PRINCIPAL.name) {
      // It would own what the nodes' apps create.
      const refusal = `permission denied: the NATS account prefix '${name}' is reserved for the mq9 nodes' own account; give this account another prefix in the nats-server configuration (docs/cluster.md)`;
      return { subject: rest, imported: true, refusal };
    }
    return {
      subject: rest,
      principal: { name, admin: this.admins.has(name), mailboxGrants: [] },
      imported: true,
    };
  }
}
