import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

// `mq9 cluster status` against a broker of its own; cluster.test.ts and cluster-up.test.ts run it
// against cluster nodes.
describe("mq9 cluster status on a broker of its own", () => {
  let served: ServeProcess;
  beforeAll(async () => {
    served = await spawnServe(["--data", tempDir(), "--registry-embedder", "none", "--orchestrator", "off"]);
  }, 60_000);
  afterAll(() => {
    served?.child.kill("SIGTERM");
  });

  it("says there is no cluster, as text and as JSON", async () => {
    const server = `127.0.0.1:${served.port}`;
    const text = await runCli(["cluster", "status", "--server", server]);
    expect(text).toMatchObject({
      code: 0,
      stdout: "this broker runs on its own (mq9 serve without --cluster): it has no cluster nodes\n",
    });
    const json = await runCli(["cluster", "status", "--server", server, "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ clustered: false, nodes: [] });
  });

  it("an HTTP address where nothing answers: exit 3 and what to check", async () => {
    const away = await runCli(["cluster", "status", "--http", "http://127.0.0.1:9"]);
    expect(away.code).toBe(3);
    expect(away.stderr).toMatch(/^mq9: cannot reach the broker's HTTP API at http:\/\/127.0.0.1:9 /);
  });
});
