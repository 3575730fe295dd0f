// A worker pool: three workers compete for the jobs of one mailbox.
//
// Workers that share a consumer group split the work: a fetched job is leased to
// one worker and ACKed when done, so every job is handled exactly once. Jobs are
// handed out critical first, then urgent, then normal.
//
//   mq9 serve &
//   node examples/worker-pool.js
import { connect } from "@mq9/client";

const server = process.env.MQ9_SERVER;
const jobs = `demo.jobs.${Date.now().toString(36)}`;

const producer = await connect(server);
await producer.createMailbox({ name: jobs, ttlSeconds: 3600 });
const plan = [
  ...Array.from({ length: 6 }, (_, i) => ({ id: `report-${i}`, priority: "normal" })),
  ...Array.from({ length: 4 }, (_, i) => ({ id: `invoice-${i}`, priority: "urgent" })),
  ...Array.from({ length: 2 }, (_, i) => ({ id: `outage-${i}`, priority: "critical" })),
];
for (const job of plan) await producer.send(jobs, job, { priority: job.priority });
console.log(`queued ${plan.length} jobs: 6 normal, 4 urgent, 2 critical`);

const handled = [];
const workers = [];
let allDone;
const finished = new Promise((resolve) => {
  allDone = resolve;
});
for (const name of ["w1", "w2", "w3"]) {
  const client = await connect(server);
  const consumer = client.consume(
    jobs,
    async (message) => {
      const job = message.json();
      handled.push({ worker: name, job: job.id, priority: message.priority });
      await new Promise((resolve) => setTimeout(resolve, 20)); // the work
      if (handled.length === plan.length) allDone();
    },
    // batch 1: a worker takes one job at a time, so the others can take the next ones.
    { group: "pool", deliver: "earliest", batch: 1 },
  );
  workers.push({ client, consumer });
}
await finished;
for (const { client } of workers) await client.close();

for (const name of ["w1", "w2", "w3"]) {
  const mine = handled.filter((h) => h.worker === name).map((h) => h.job);
  console.log(`${name} handled ${mine.length} jobs: ${mine.join(", ")}`);
}
const ids = handled.map((h) => h.job);
console.log(`each job handled once: ${new Set(ids).size === plan.length && ids.length === plan.length}`);
const started = (priority) => handled.flatMap((h, i) => (h.priority === priority ? [i] : []));
const lastCritical = Math.max(...started("critical"));
const firstNormal = Math.min(...started("normal"));
console.log(`critical jobs started before any normal one: ${lastCritical < firstNormal}`);

// Nothing is left for the group: every job was ACKed.
const left = await producer.fetch(jobs, { group: "pool", maxWaitMs: 0 });
console.log(`left in the queue: ${left.length}`);
await producer.close();
