// The nats-server configuration of a secured mq9 cluster (docs/cluster.md, "One NATS account per
// user"): the mq9 nodes in an account of their own, each user in its own account, importing the
// nodes' service under a prefix that only this configuration decides. Used by
// `npm run cluster:up -- --secured` and the cluster security tests.

/** A NATS string literal: the config's quoted form. */
const quoted = (value) => JSON.stringify(String(value));

/**
 * The `SYS` account's lines inside `accounts { … }` (the config also needs `system_account: SYS`):
 * its one user may only ping the servers, look up a connection and close it (docs/cluster.md,
 * Hung nodes).
 */
export function systemAccountLines({ user, password }) {
  return [
    "  SYS {",
    "    users = [ {",
    `      user: ${quoted(user)}, password: ${quoted(password)}`,
    '      permissions: { publish: ["$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.*.CONNZ", "$SYS.REQ.SERVER.*.KICK"], subscribe: ["_INBOX.>"] }',
    "    } ]",
    "  }",
  ];
}

/**
 * The config text. Options: nodes ([{ user, password }]: the mq9 nodes' NATS users), users
 * ([{ account, user, password }]: one account per user or team; its name is the prefix the nodes
 * read as the requester), system (optional { user, password }: a user of the system account `SYS`,
 * allowed only what a node needs to drop a hung node: docs/cluster.md, Hung nodes).
 */
export function securedNatsConfig({ nodes, users, system }) {
  const accounts = [...new Set(users.map((u) => u.account))];
  for (const account of accounts) {
    if (!/^[A-Za-z0-9_-]+$/.test(account) || ["MQ9", "SYS", "mq9-internal"].includes(account))
      throw new Error(
        `account name ${account}: letters, digits, _ and - only, and not MQ9, SYS or mq9-internal`,
      );
  }
  const lines = [
    "accounts {",
    "  # The mq9 nodes alone: their queue group, presence news, roll call and wake-ups live here.",
    "  MQ9 {",
    `    users = [ ${nodes.map((n) => `{ user: ${quoted(n.user)}, password: ${quoted(n.password)} }`).join(", ")} ]`,
    "    exports = [",
    ...accounts.map((a) => `      { service: "${a}.$mq9.AI.>", accounts: [${a}] }`),
    "    ]",
    "  }",
    ...accounts.flatMap((a) => [
      `  ${a} {`,
      `    users = [ ${users
        .filter((u) => u.account === a)
        .map((u) => `{ user: ${quoted(u.user)}, password: ${quoted(u.password)} }`)
        .join(", ")} ]`,
      `    imports = [ { service: { account: MQ9, subject: "${a}.$mq9.AI.>" }, to: "$mq9.AI.>" } ]`,
      "  }",
    ]),
    ...(system ? systemAccountLines(system) : []),
    "}",
    ...(system ? ["system_account: SYS"] : []),
    "",
  ];
  return lines.join("\n");
}
