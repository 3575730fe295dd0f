import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  brokerKindMissing,
  type NatsServers,
  type PrivatePostgres,
  startNatsServers,
  startPrivatePostgres,
} from "@mq9/testkit";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectAppsServe, WITH_ORCHESTRATOR } from "./cluster-apps.js";
import { type Mq9NodeProcess, mq9Client, payloads, startNode } from "./cluster-harness.js";

function opensslMissing(): string | undefined {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return undefined;
  } catch {
    const reason = "openssl not installed (apt-get install openssl)";
    if (process.env.CI) throw new Error(`CI: ${reason}`);
    return reason;
  }
}

const missing = brokerKindMissing("cluster") ?? opensslMissing();

/** A throw-away CA, a server certificate for 127.0.0.1 signed by it, and a client certificate. */
function makeCertificates(dir: string) {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...key,
    "-keyout",
    "ca-key.pem",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=mq9 test CA",
  );
  const signed = (name: string, extensions: string) => {
    writeFileSync(file(`${name}.ext`), extensions);
    openssl("req", ...key, "-keyout", `${name}-key.pem`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    openssl(
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca-key.pem",
      "-CAcreateserial",
      "-days",
      "2",
      "-out",
      `${name}.pem`,
      "-extfile",
      `${name}.ext`,
    );
  };
  // The nats client upgrades its socket to TLS without the host name; Node then checks "localhost".
  signed("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  signed("client", "extendedKeyUsage=clientAuth\n");
  return {
    ca: file("ca.pem"),
    serverCert: file("server.pem"),
    serverKey: file("server-key.pem"),
    clientCert: file("client.pem"),
    clientKey: file("client-key.pem"),
  };
}

// nats-servers that demand TLS and credentials, as an operator's cluster would: a node passes
// them with --nats-tls-*, --nats-user/--nats-password or --nats-token, and agents connect with
// their own. Each server here is a one-server cluster (routes are not what is tested).
describe.skipIf(missing !== undefined)(
  `cluster on a secured NATS${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let dir: string;
    let certs: ReturnType<typeof makeCertificates>;
    let pg: PrivatePostgres;
    let mutual: NatsServers;
    let tokenOnly: NatsServers;
    const nodes: Mq9NodeProcess[] = [];
    const conns: NatsConnection[] = [];

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "mq9-secured-nats-"));
      certs = makeCertificates(dir);
      const tls = (verify: boolean) => `tls {
  cert_file: "${certs.serverCert}"
  key_file: "${certs.serverKey}"
  ca_file: "${certs.ca}"
  verify: ${verify}
  timeout: 5
}
`;
      [pg, mutual, tokenOnly] = await Promise.all([
        startPrivatePostgres(),
        startNatsServers({
          size: 1,
          config: `${tls(true)}authorization {
  users = [
    { user: "mq9-node", password: "node-secret" }
    { user: "agent", password: "agent-secret" }
  ]
}
`,
        }),
        startNatsServers({
          size: 1,
          config: `${tls(false)}authorization { token: "cluster-token" }\n`,
        }),
      ]);
    }, 240_000);

    afterAll(async () => {
      await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
      await Promise.all(nodes.map((node) => node.stop()));
      await Promise.all([mutual?.stop(), tokenOnly?.stop(), pg?.stop()]);
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    /** A node on `servers` with `flags`, on its own schema so the tests do not share mailboxes. */
    const startSecured = async (nodeId: string, servers: string[], flags: string[]) => {
      const node = await startNode({
        nodeId,
        nats: servers,
        postgres: pg.url,
        // These tests are about the NATS side; the HTTP API's auth is cluster-http-auth.test.ts's.
        args: ["--http-without-auth", "--postgres-schema", nodeId.replace(/-/g, "_"), ...flags],
      });
      nodes.push(node);
      return node;
    };

    /** CREATE, SEND, FETCH and ACK through a client of the secured server. */
    const roundTrip = async (nc: NatsConnection, mailbox: string) => {
      conns.push(nc);
      const via = mq9Client(nc);
      expect(await via("$mq9.AI.MAILBOX.CREATE", { name: mailbox })).toEqual({
        error: "",
        mail_address: mailbox,
      });
      expect(await via(`$mq9.AI.MSG.SEND.${mailbox}`, "over tls")).toEqual({ error: "", msg_id: 0 });
      const got = await via(`$mq9.AI.MSG.FETCH.${mailbox}`, { group_name: "g", deliver: "earliest" });
      expect(payloads(got)).toEqual(["over tls"]);
      expect(await via(`$mq9.AI.MSG.ACK.${mailbox}`, { group_name: "g", msg_id: 0 })).toEqual({ error: "" });
    };

    const health = async (node: Mq9NodeProcess) =>
      (await (await fetch(`http://127.0.0.1:${node.httpPort}/healthz`)).json()) as {
        ok: boolean;
        nats: { connected: boolean };
      };

    it("TLS with client certificates and users — the node and its apps attach with CA, cert, key, user and password", async () => {
      const node = await startSecured("mutual-tls", mutual.urls, [
        ...WITH_ORCHESTRATOR,
        "--nats-tls-ca",
        certs.ca,
        "--nats-tls-cert",
        certs.clientCert,
        "--nats-tls-key",
        certs.clientKey,
        "--nats-user",
        "mq9-node",
        "--nats-password",
        "node-secret",
      ]);
      expect(await health(node)).toMatchObject({ ok: true, nats: { connected: true } });
      const agent = await connect({
        servers: mutual.urls,
        user: "agent",
        pass: "agent-secret",
        tls: { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey },
      });
      await roundTrip(agent, "secured.mutual");
      // MCP, the A2A gateway and the orchestrator present the node's client certificate too.
      await expectAppsServe(
        node,
        {
          servers: mutual.urls,
          options: {
            user: "agent",
            password: "agent-secret",
            tls: { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey },
          },
        },
        "secured.mcp",
      );
    }, 180_000);

    it("token over TLS — the node attaches with --nats-token and the CA", async () => {
      const node = await startSecured("token-tls", tokenOnly.urls, [
        "--nats-tls-ca",
        certs.ca,
        "--nats-token",
        "cluster-token",
      ]);
      expect(await health(node)).toMatchObject({ ok: true, nats: { connected: true } });
      const agent = await connect({
        servers: tokenOnly.urls,
        token: "cluster-token",
        tls: { caFile: certs.ca },
      });
      await roundTrip(agent, "secured.token");
    });

    it("refused — a wrong password, a missing client certificate or an unknown CA stops the start with the reason", async () => {
      const tlsFlags = [
        "--nats-tls-ca",
        certs.ca,
        "--nats-tls-cert",
        certs.clientCert,
        "--nats-tls-key",
        certs.clientKey,
      ];
      const refusals: [string, string[], string[], RegExp][] = [
        [
          "bad-password",
          mutual.urls,
          [...tlsFlags, "--nats-user", "mq9-node", "--nats-password", "wrong"],
          /cannot reach the NATS cluster at .*[Aa]uthorization [Vv]iolation.*credentials/,
        ],
        [
          "no-client-cert",
          mutual.urls,
          ["--nats-tls-ca", certs.ca, "--nats-user", "mq9-node", "--nats-password", "node-secret"],
          // The nats client reports only that the handshake did not finish.
          /cannot reach the NATS cluster at .*check --nats and the cluster's credentials/,
        ],
        [
          "bad-token",
          tokenOnly.urls,
          ["--nats-tls-ca", certs.ca, "--nats-token", "wrong"],
          /[Aa]uthorization [Vv]iolation/,
        ],
        // The server's certificate is signed by a CA the node was not told of.
        [
          "unknown-ca",
          tokenOnly.urls,
          ["--nats-token", "cluster-token"],
          /cannot reach the NATS cluster at .*certificate/i,
        ],
      ];
      for (const [nodeId, servers, flags, reason] of refusals) {
        const start = startSecured(nodeId, servers, flags);
        await expect(start, nodeId).rejects.toThrow(/exited during start/);
        await expect(start, nodeId).rejects.toThrow(reason);
      }
    }, 180_000);
  },
);
