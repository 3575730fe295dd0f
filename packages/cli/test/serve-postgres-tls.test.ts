import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, freshSchema, postgresMissing, postgresOsUser, usePrivatePostgres } from "@mq9/testkit";
import { describe, expect, it } from "vitest";
import { runCli, spawnServe, tempDir } from "./cli-harness.js";

const missing = postgresMissing();

/** A CA and a certificate it signed for 127.0.0.1, in `dir`; the key readable by the server only. */
async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const at = (name: string) => join(dir, name);
  const openssl = (command: string) =>
    execFileSync("openssl", command.split(" "), { cwd: dir, stdio: "ignore" });
  openssl("req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=mq9-test-ca");
  openssl("req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1");
  writeFileSync(at("ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
  openssl(
    "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext.cnf",
  );
  const user = await postgresOsUser();
  if (user) for (const name of ["", "server.crt", "server.key"]) chownSync(at(name), user.uid, user.gid);
  chmodSync(at("server.key"), 0o600);
  return { ca: at("ca.pem"), cert: at("server.crt"), key: at("server.key") };
}

// The pg driver verifies the server's certificate for sslmode=require as well (libpq would not):
// a user of a managed PostgreSQL meets that first, so the error must say what to add.
describe.skipIf(missing !== undefined)(
  `mq9 serve --postgres over TLS${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    const db = usePrivatePostgres();

    it("names a server without TLS and an unverified certificate, each with its fix, then runs with the CA given by sslrootcert", async () => {
      const schema = freshSchema();
      const base = `${db.pg.url}?sslmode=require`;
      const common = [
        "--postgres-schema",
        schema,
        "--registry-embedder",
        "none",
        "--port",
        "0",
        "--http-port",
        "0",
      ];
      const plain = await runCli(["serve", "--postgres", base, ...common]);
      expect(plain.code).toBe(1);
      expect(plain.stderr).toContain("does not accept TLS connections");
      expect(plain.stderr).toContain("drop sslmode from --postgres, or turn ssl on in the server");

      const files = await makeCertificates(tempDir());
      await db.pg.query(`ALTER SYSTEM SET ssl_cert_file = '${files.cert}'`);
      await db.pg.query(`ALTER SYSTEM SET ssl_key_file = '${files.key}'`);
      await db.pg.query("ALTER SYSTEM SET ssl = on");
      await db.pg.query("SELECT pg_reload_conf()");
      // The reload is a signal: a new session shows ssl on once the server has taken it.
      await eventually(async () => (await db.pg.query("SHOW ssl")) === "on");

      const unverified = await runCli(["serve", "--postgres", base, ...common]);
      expect(unverified.code).toBe(1);
      expect(unverified.stderr).toContain(`the TLS certificate of PostgreSQL at 127.0.0.1:${db.pg.port}`);
      expect(unverified.stderr).toContain("give the CA that signed it with sslrootcert=/path/to/ca.pem");

      const verified = await spawnServe([
        "--postgres",
        `${db.pg.url}?sslmode=verify-full&sslrootcert=${files.ca}`,
        "--postgres-schema",
        schema,
        "--registry-embedder",
        "none",
      ]);
      const health = (await (await fetch(`http://127.0.0.1:${verified.httpPort}/healthz`)).json()) as {
        postgres: { up: boolean };
      };
      expect(health.postgres.up).toBe(true);
      // The broker's connections are the encrypted ones.
      expect(
        await db.pg.query(
          "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'mq9'",
        ),
      ).toBe("t");
      verified.child.kill("SIGTERM");
      expect(await verified.exited).toBe(0);
    });
  },
);
