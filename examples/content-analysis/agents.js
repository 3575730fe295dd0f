// The three agents of the content-analysis example. Each is a small class on the
// Agent SDK: a manifest (name, capabilities, max_concurrency) and handleMessage(),
// which answers with this.reply(message, "result", payload). No model is needed:
// the "analysis" is plain text processing, so the example runs anywhere.
import { pathToFileURL } from "node:url";
import { Agent } from "@mq9/agent";

const STOPWORDS = new Set(
  "a an and are as at be but by for from has have in is it its of on or that the this to was were will with can into than then they them their our we you your not no so each every other while through".split(
    " ",
  ),
);

const sentences = (text) =>
  text
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
const words = (text) => text.toLowerCase().match(/[a-z][a-z0-9'-]+/g) ?? [];

/** Keeps the first two sentences: the lead of a text usually says what it is about. */
export class Summarizer extends Agent {
  constructor(options) {
    super(
      {
        name: "summarizer",
        capabilities: ["summarize"],
        description: "Summarizes a text in one or two sentences.",
        max_concurrency: 4,
      },
      options,
    );
  }

  async handleMessage(message, { memory }) {
    if (message.msg_type !== "query") return undefined;
    const lead = sentences(String(message.payload?.text ?? ""))
      .slice(0, 2)
      .join(" ");
    // Other agents of this trace can read it from the trace's memory.
    await memory.set("summary", lead);
    return this.reply(message, "result", { summary: lead });
  }
}

/** The most frequent words that are not stopwords. */
export class KeywordExtractor extends Agent {
  constructor(options) {
    super(
      {
        name: "keyword-extractor",
        capabilities: ["extract_keywords"],
        description: "Extracts the keywords of a text.",
        max_concurrency: 4,
      },
      options,
    );
  }

  handleMessage(message) {
    if (message.msg_type !== "query") return undefined;
    const counts = new Map();
    for (const word of words(String(message.payload?.text ?? ""))) {
      if (!STOPWORDS.has(word) && word.length > 2) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
    const keywords = [...counts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, 5)
      .map(([word]) => word);
    return this.reply(message, "result", { keywords });
  }
}

/** A readability score from sentence length, with the problems it found. */
export class QualityChecker extends Agent {
  constructor(options) {
    super(
      {
        name: "quality-checker",
        capabilities: ["check_quality"],
        description: "Checks the writing quality of a text and scores it from 0 to 1.",
        max_concurrency: 2,
      },
      options,
    );
  }

  handleMessage(message) {
    if (message.msg_type !== "query") return undefined;
    const text = String(message.payload?.text ?? "");
    const parts = sentences(text);
    const average = parts.length ? words(text).length / parts.length : 0;
    const issues = [];
    if (parts.length < 2) issues.push("fewer than two sentences");
    if (average > 25) issues.push(`long sentences (${average.toFixed(0)} words on average)`);
    const score = Math.max(0, Math.min(1, 1 - issues.length * 0.3 - Math.max(0, average - 20) / 50));
    return this.reply(message, "result", { score: Number(score.toFixed(2)), issues });
  }
}

/** Starts one of each agent against a broker; resolves with them (stop them with agent.stop()). */
export async function startAgents(server, options = {}) {
  const agents = [new Summarizer(options), new KeywordExtractor(options), new QualityChecker(options)];
  for (const agent of agents) await agent.start(server);
  return agents;
}

// `node examples/content-analysis/agents.js`: run the three agents until Ctrl-C (MQ9_SERVER picks the broker).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const agents = await startAgents(process.env.MQ9_SERVER ?? "mq9://127.0.0.1:4332");
  console.log(`running ${agents.map((a) => a.name).join(", ")}; Ctrl-C to stop`);
  process.once("SIGINT", async () => {
    for (const agent of agents) await agent.stop();
    process.exit(0);
  });
}
