// A tiny OTLP/HTTP sink for BENCH_OTLP=1: takes every export, counts its requests and bytes, and
// answers 200 at once, so the figures show what tracing costs the broker, not a backend.
import { createServer } from "node:http";

export async function startOtlpSink() {
  const counts = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on("data", (chunk) => {
      counts.bytes += chunk.length;
    });
    req.on("end", () => {
      counts.requests++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    counts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
