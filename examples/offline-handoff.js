// Two agents exchange work while one of them is offline.
//
// The planner hands three tasks to the translator's mailbox while the translator
// is not running, then goes offline itself. The translator starts later, works
// through its mailbox and mails each result to the planner's mailbox (named in
// the mq9-reply-to header). When the planner comes back, the results are waiting.
//
//   mq9 serve &                       # in another terminal
//   node examples/offline-handoff.js  # MQ9_SERVER=mq9://host:port to use another broker
import { connect } from "@mq9/client";

const server = process.env.MQ9_SERVER;
const run = Date.now().toString(36);
const plannerInbox = `demo.planner.${run}`;
const translatorInbox = `demo.translator.${run}`;

// --- The planner is online; the translator is not. ---
const planner = await connect(server);
await planner.createMailbox({ name: plannerInbox, ttlSeconds: 3600 });
await planner.createMailbox({ name: translatorInbox, ttlSeconds: 3600 });
const tasks = ["good morning", "thank you", "see you tomorrow"];
for (const text of tasks) {
  await planner.send(translatorInbox, { text, to: "ja" }, { headers: { "mq9-reply-to": plannerInbox } });
}
console.log(`planner: sent ${tasks.length} tasks to ${translatorInbox} and went offline`);
await planner.close();

// --- Later the translator starts and handles what arrived while it was away. ---
const dictionary = { "good morning": "おはよう", "thank you": "ありがとう", "see you tomorrow": "また明日" };
const translator = await connect(server);
let done = 0;
const worker = translator.consume(
  translatorInbox,
  async (task) => {
    const { text } = task.json();
    await translator.send(task.headers["mq9-reply-to"], { text, ja: dictionary[text] });
    if (++done === tasks.length) void worker.stop();
  },
  { group: "translator", deliver: "earliest" },
);
const failure = await worker.closed();
if (failure) throw failure;
console.log(`translator: handled ${done} tasks and went offline`);
await translator.close();

// --- The planner comes back; its results are in its mailbox. ---
const back = await connect(server);
const results = await back.fetch(plannerInbox, { group: "planner", deliver: "earliest", maxWaitMs: 1000 });
for (const result of results) {
  const { text, ja } = result.json();
  console.log(`planner: ${text} -> ${ja}`);
}
await back.ack(plannerInbox, "planner", results[results.length - 1].msgId);
await back.close();
