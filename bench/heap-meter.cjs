// Preloaded into a broker (BENCH_MQ9_NODE_ARGS="--require ./bench/heap-meter.cjs") so a probe can
// read the bytes its JavaScript heap allocated between two SIGUSR2 signals, scavenged objects
// included: V8 exposes no running total, so each GC's heap before it, less the heap after the
// previous one, is summed (the external line does the same for Buffers' backing stores).
// Each signal appends "heap <bytes> external <bytes> gcs <n> gc_us <µs> kinds <type:n,...>" since the
// previous signal to HEAP_METER_FILE (the GCs' own time as V8 reports it, and how many of each kind).
const { GCProfiler, getHeapStatistics } = require("node:v8");
const { appendFileSync } = require("node:fs");

let profiler = new GCProfiler();
let last = getHeapStatistics();
profiler.start();
process.on("SIGUSR2", () => {
  const { statistics } = profiler.stop();
  const now = getHeapStatistics();
  let heap = 0;
  let external = 0;
  let afterHeap = last.used_heap_size;
  let afterExternal = last.external_memory;
  let costUs = 0;
  const kinds = {};
  for (const gc of statistics) {
    costUs += gc.cost;
    kinds[gc.gcType] = (kinds[gc.gcType] ?? 0) + 1;
    heap += gc.beforeGC.heapStatistics.usedHeapSize - afterHeap;
    external += Math.max(0, gc.beforeGC.heapStatistics.externalMemory - afterExternal);
    afterHeap = gc.afterGC.heapStatistics.usedHeapSize;
    afterExternal = gc.afterGC.heapStatistics.externalMemory;
  }
  heap += now.used_heap_size - afterHeap;
  external += Math.max(0, now.external_memory - afterExternal);
  const byKind = Object.entries(kinds)
    .map(([kind, n]) => `${kind}:${n}`)
    .join(",");
  appendFileSync(
    process.env.HEAP_METER_FILE,
    `heap ${heap} external ${external} gcs ${statistics.length} gc_us ${costUs} kinds ${byKind || "-"}\n`,
  );
  last = getHeapStatistics();
  profiler = new GCProfiler();
  profiler.start();
});
