// A status mailbox with key compaction.
//
// Each agent posts its status with the key `status.<agent>`. A newer message with
// the same key replaces the older one, so the mailbox holds one current status per
// agent however often they post, and QUERY reads the board without consuming it.
//
//   mq9 serve &
//   node examples/status-mailbox.js
import { connect } from "@mq9/client";

const server = process.env.MQ9_SERVER;
const board = `demo.status.${Date.now().toString(36)}`;

const client = await connect(server);
await client.createMailbox({ name: board, ttlSeconds: 3600 });

const updates = [
  ["crawler", "starting"],
  ["indexer", "starting"],
  ["crawler", "fetching 10/100"],
  ["summarizer", "idle"],
  ["crawler", "fetching 90/100"],
  ["indexer", "indexing"],
  ["crawler", "done"],
  ["summarizer", "summarising batch 1"],
];
for (const [agent, state] of updates) {
  await client.send(board, { agent, state }, { key: `status.${agent}`, tags: [agent] });
}
console.log(`posted ${updates.length} updates from 3 agents`);

const current = await client.query(board);
console.log(`the board holds ${current.length} messages, one per agent:`);
for (const message of current) {
  const { agent, state } = message.json();
  console.log(`  ${agent.padEnd(10)} ${state}`);
}

const [crawler] = await client.query(board, { key: "status.crawler" });
console.log(`crawler by key: ${crawler.json().state}`);
await client.close();
