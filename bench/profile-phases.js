// Splits a V8 .cpuprofile (node --cpu-prof) into phases separated by idle stretches, and prints
// each phase's busiest functions by self time, and the share of time under chosen functions.
// Pair it with `GAP_MS=2000 node bench/consume-probe.js` to see a drain apart from its sends.
//
//   node bench/profile-phases.js FILE.cpuprofile [--gap-ms 500] [--phase N] [--top 40]
//                                [--under fnA,fnB]   (inclusive ms of frames named so, per phase)
//                                [--within fnA,fnB]  (only samples under frames named so)
import { readFileSync } from "node:fs";

const argv = process.argv.slice(2);
const file = argv[0];
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? fallback : argv[i + 1];
};
const gapMs = Number(opt("gap-ms", 500));
const top = Number(opt("top", 40));
const only = opt("phase", undefined);
const under = (opt("under", "") || "").split(",").filter(Boolean);
const within = new Set((opt("within", "") || "").split(",").filter(Boolean));

const profile = JSON.parse(readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.split("/").slice(-2).join("/")}:${f.lineNumber + 1}` : "";
  return `${f.functionName || "(anonymous)"} ${where}`.trim();
};
const isIdle = (n) => ["(idle)", "(program)"].includes(n.callFrame.functionName);

// Samples with their times, in 100 ms buckets; a bucket less than 5 % busy is quiet, and a
// phase is a run of samples with no quiet stretch longer than gapMs (timers tick while idle).
const BUCKET_MS = 100;
const timed = [];
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  timed.push([
    nodes.get(profile.samples[i]),
    (profile.timeDeltas[i + 1] ?? 0) / 1000,
    (t - profile.startTime) / 1000,
  ]);
}
const busyIn = new Map();
for (const [node, dt, at] of timed) {
  if (isIdle(node)) continue;
  const b = Math.floor(at / BUCKET_MS);
  busyIn.set(b, (busyIn.get(b) ?? 0) + dt);
}
const quiet = (b) => (busyIn.get(b) ?? 0) < BUCKET_MS * 0.05;
const phases = [];
let current;
let lastBusyBucket;
for (const sample of timed) {
  const b = Math.floor(sample[2] / BUCKET_MS);
  if (quiet(b)) continue;
  if (!current || (b - lastBusyBucket) * BUCKET_MS > gapMs) {
    current = { startMs: sample[2], samples: [] };
    phases.push(current);
  }
  lastBusyBucket = b;
  current.samples.push(sample);
}
phases.forEach((phase, k) => {
  if (only !== undefined && Number(only) !== k) return;
  const self = new Map();
  const inclusive = new Map(under.map((u) => [u, 0]));
  let busy = 0;
  for (const [node, dt] of phase.samples) {
    if (isIdle(node)) continue;
    if (within.size > 0) {
      let inside = false;
      for (let id = node.id; id !== undefined && !inside; id = parent.get(id))
        inside = within.has(nodes.get(id).callFrame.functionName);
      if (!inside) continue;
    }
    busy += dt;
    self.set(label(node), (self.get(label(node)) ?? 0) + dt);
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const name = nodes.get(id).callFrame.functionName;
      if (inclusive.has(name) && !seen.has(name)) {
        seen.add(name);
        inclusive.set(name, inclusive.get(name) + dt);
      }
    }
  }
  const endMs = phase.samples.at(-1)[2];
  console.log(`phase ${k}: ${phase.startMs.toFixed(0)}–${endMs.toFixed(0)} ms, busy ${busy.toFixed(0)} ms`);
  if (only === undefined && phases.length > 1 && busy < 50) return;
  for (const [name, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${ms.toFixed(1).padStart(8)} ms ${((ms / busy) * 100).toFixed(1).padStart(5)}%  ${name}`);
  for (const [name, ms] of inclusive)
    console.log(`  under ${name}: ${ms.toFixed(1)} ms (${((ms / busy) * 100).toFixed(1)}%)`);
});
