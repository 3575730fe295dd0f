// The nats-server configuration of a secured mq9 cluster (docs/cluster.md, "One NATS account per
// user"): the mq9 nodes in an account of their own, each user in its own account, importing the
// nodes' service under a prefix that only this configuration decides. Used by
// `npm run cluster:up -- --secured` and the cluster security tests.

/** A NATS string literal: the config's quoted form. */
const quoted = (value) => JSON.stringify(String(value));

/**
 * The config text. Options: nodes ([{ user, password }]: the mq9 nodes' NATS users), users
 * ([{ account, user, password }]: one account per user or team; its name is the prefix the nodes
 * read as the requester).
 */
export function securedNatsConfig({ nodes, users }) {
  const accounts = [...new Set(users.map((u) => u.account))];
  for (const account of accounts) {
    if (!/^[A-Za-z0-9_-]+$/.test(account) || account === "MQ9" || account === "mq9-internal")
      throw new Error(`account name ${account}: letters, digits, _ and - only, and not MQ9 or mq9-internal`);
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
    "}",
    "",
  ];
  return lines.join("\n");
}
