// Preloaded into a broker (BENCH_MQ9_NODE_ARGS="--require ./bench/heap-meter.cjs") so a probe can
// read the bytes its JavaScript heap allocated between two SIGUSR2 signals, scavenged objects
// included: V8 exposes no running total, so each GC's heap before it, less the heap after the
// previous one, is summed (the external line does the same for Buffers' backing stores).
// Each signal appends "heap <bytes> external <bytes>" since the previous signal to HEAP_METER_FILE.
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
  for (const gc of statistics) {
    heap += gc.beforeGC.heapStatistics.usedHeapSize - afterHeap;
    external += Math.max(0, gc.beforeGC.heapStatistics.externalMemory - afterExternal);
    afterHeap = gc.afterGC.heapStatistics.usedHeapSize;
    afterExternal = gc.afterGC.heapStatistics.externalMemory;
  }
  heap += now.used_heap_size - afterHeap;
  external += Math.max(0, now.external_memory - afterExternal);
  appendFileSync(process.env.HEAP_METER_FILE, `heap ${heap} external ${external} gcs ${statistics.length}\n`);
  last = getHeapStatistics();
  profiler = new GCProfiler();
  profiler.start();
});
