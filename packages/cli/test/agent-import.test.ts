import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";
import { invoiceCard } from "./fixtures/invoice-card.js";

const v1Card = invoiceCard;
const v03Card = {
  name: "weather",
  description: "Forecasts.",
  url: "https://weather.test/a2a",
  protocolVersion: "0.3.0",
  version: "2.0.0",
  capabilities: {},
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "f", name: "Forecast", description: "Rain and wind.", tags: ["weather"] }],
};

describe("mq9 agent import and mq9 models fetch", () => {
  const data = tempDir();
  let serve: ServeProcess;
  let site: Server;
  let siteUrl: string;
  const served: Record<string, string | Buffer> = {
    "/.well-known/agent-card.json": JSON.stringify(v1Card),
    "/legacy/.well-known/agent.json": JSON.stringify(v03Card),
  };

  beforeAll(async () => {
    serve = await spawnServe(["--data", join(data, "broker"), "--registry-embedder", "none"]);
    site = createServer((req, res) => {
      const body = served[req.url ?? ""];
      if (body === undefined) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
    await new Promise((resolve) => site.close(resolve));
    rmSync(data, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => runCli([...args, "--server", `mq9://127.0.0.1:${serve.port}`]);
  const discover = async (...args: string[]) => {
    const { stdout, code } = await cli("agent", "discover", ...args, "--json");
    expect(code).toBe(0);
    return stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  it("imports a v1.0 card from a site's well-known URL, with the mailbox given", async () => {
    const result = await cli("agent", "import", siteUrl, "--mailbox", "agents.invoice", "--ttl", "600");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("imported Invoice Checker → agents.invoice");
    const [agent] = await discover("purchase orders");
    expect(agent).toMatchObject({ ...v1Card, mailbox: "agents.invoice", ttl: 600 });
  });

  it("falls back to the v0.2 agent.json path, and reads cards from a file", async () => {
    const legacy = await cli("agent", "import", `${siteUrl}/legacy/`, "--mailbox", "agents.weather");
    expect(legacy.code).toBe(0);
    expect((await discover("rain"))[0]).toMatchObject({ name: "weather", mailbox: "agents.weather" });
    const file = join(data, "cards.json");
    writeFileSync(
      file,
      JSON.stringify([
        { ...v03Card, name: "Tide Tables" },
        { ...v1Card, name: "Ledger Bot" },
      ]),
    );
    const many = await cli("agent", "import", file, "--mailbox", "agents.{name}");
    expect(many.code).toBe(0);
    const names = (await discover()).map((a) => `${a.name}@${a.mailbox}`);
    expect(names).toEqual(
      expect.arrayContaining(["Tide Tables@agents.tide.tables", "Ledger Bot@agents.ledger.bot"]),
    );
  });

  it("says what is wrong with a bad source", async () => {
    const missing = await cli("agent", "import", `${siteUrl}/nothing/`, "--mailbox", "x.y");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no ARD manifest or agent card found: .*HTTP 404/);
    const file = join(data, "many.json");
    writeFileSync(file, JSON.stringify([v1Card, v03Card]));
    const ambiguous = await cli("agent", "import", file, "--mailbox", "one.box");
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/holds 2 cards: give --mailbox with \{name\}/);
    const notCard = join(data, "not-card.json");
    writeFileSync(notCard, "[1]");
    expect((await cli("agent", "import", notCard, "--mailbox", "a.b")).stderr).toMatch(
      /does not hold an A2A agent card/,
    );
  });

  it("models fetch downloads a model's files from a hub (a local mirror here)", async () => {
    for (const file of ["onnx/model.onnx", "tokenizer.json", "vocab.txt", "config.json"]) {
      served[`/org/mini/resolve/main/${file}`] = Buffer.from(`contents of ${file}`);
    }
    const dir = join(data, "models");
    mkdirSync(dir, { recursive: true });
    const args = [
      "models",
      "fetch",
      "all-MiniLM-L6-v2",
      "--dir",
      dir,
      "--hub",
      siteUrl,
      "--repo",
      "org/mini",
    ];
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/model ready in .*all-MiniLM-L6-v2/);
    expect(readFileSync(join(dir, "all-MiniLM-L6-v2", "onnx", "model.onnx"), "utf8")).toBe(
      "contents of onnx/model.onnx",
    );
    // Fetched again: what is in place is kept, unless --force.
    served["/org/mini/resolve/main/onnx/model.onnx"] = Buffer.from("a newer model");
    const again = await runCli(args);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/kept onnx\/model\.onnx \(already there; --force fetches it again\)/);
    expect(readFileSync(join(dir, "all-MiniLM-L6-v2", "onnx", "model.onnx"), "utf8")).toBe(
      "contents of onnx/model.onnx",
    );
    expect((await runCli([...args, "--force"])).stdout).toMatch(/fetched onnx\/model\.onnx/);
    expect(readFileSync(join(dir, "all-MiniLM-L6-v2", "onnx", "model.onnx"), "utf8")).toBe("a newer model");
    const failed = await runCli(["models", "fetch", "bge-small-en-v1.5", "--dir", dir, "--hub", siteUrl]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /could not fetch bge-small-en-v1.5: .*HTTP 404; without network access, copy the files/,
    );
  });
});
