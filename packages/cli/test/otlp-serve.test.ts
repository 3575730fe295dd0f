import { rmSync } from "node:fs";
import { join } from "node:path";
import { Subjects } from "@mq9/protocol";
import { OtlpReceiver, until } from "@mq9/testkit";
import { connect, headers as natsHeaders } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServeProcess, spawnServe, tempDir } from "./cli-harness.js";

const PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN = "00f067aa0ba902b7";

/** A SEND carrying a traceparent, over a plain nats connection. */
async function tracedSend(port: number, mailbox: string): Promise<void> {
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  try {
    await nc.request(Subjects.mailboxCreate, JSON.stringify({ name: mailbox }));
    const h = natsHeaders();
    h.set("traceparent", `00-${PARENT_TRACE}-${PARENT_SPAN}-01`);
    const reply = await nc.request(Subjects.send(mailbox), "hi", { headers: h, timeout: 5_000 });
    expect(JSON.parse(new TextDecoder().decode(reply.data)).error).toBe("");
  } finally {
    await nc.close();
  }
}

describe("mq9 serve exports its spans over OTLP/HTTP", () => {
  const data = tempDir();
  let receiver: OtlpReceiver;
  const served: ServeProcess[] = [];
  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
  });
  afterAll(async () => {
    for (const serve of served) {
      serve.child.kill("SIGTERM");
      await serve.exited;
    }
    await receiver.close();
    rmSync(data, { recursive: true, force: true });
  });

  const serve = async (args: string[], env: NodeJS.ProcessEnv) => {
    const started = await spawnServe(
      [
        "--registry-embedder",
        "none",
        "--orchestrator",
        "off",
        "--data",
        join(data, String(served.length)),
        ...args,
      ],
      // The standard variables reach the SDK: a short batch delay, a service name of our own.
      { OTEL_BSP_SCHEDULE_DELAY: "100", ...env },
    );
    served.push(started);
    return started;
  };

  it("--otlp-endpoint: a SEND's span is the child of the traceparent it carried", async () => {
    const started = await serve(["--otlp-endpoint", receiver.url], { OTEL_SERVICE_NAME: "mq9-flag" });
    expect(started.stdout()).toContain("spans exported over OTLP/HTTP to");
    await tracedSend(started.port, "otlp.flag");
    const span = await receiver.span(
      "the SEND",
      (s) => s.service === "mq9-flag" && s.name === "mq9 msg.send",
    );
    expect(span).toMatchObject({ traceId: PARENT_TRACE, parentSpanId: PARENT_SPAN });
    expect(span.attributes).toMatchObject({
      "messaging.system": "mq9",
      "messaging.destination.name": "otlp.flag",
    });
  });

  it("--otlp-metrics: the request metrics go to /v1/metrics of the same endpoint", async () => {
    const started = await serve(["--otlp-endpoint", receiver.url, "--otlp-metrics"], {
      OTEL_SERVICE_NAME: "mq9-metrics",
      OTEL_METRIC_EXPORT_INTERVAL: "200",
    });
    await tracedSend(started.port, "otlp.metrics");
    const exported = () => JSON.stringify(receiver.metrics);
    // An export may fall between the MAILBOX.CREATE and the SEND: wait for one that has the SEND.
    await until(
      "the SEND's request metrics",
      () => exported().includes('"mq9-metrics"') && exported().includes('"msg.send"'),
    );
    expect(exported()).toContain("mq9.broker.requests");
    expect(exported()).toContain("mq9.broker.request.duration");
  });

  it("OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on", async () => {
    const started = await serve([], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: "mq9-env",
    });
    await tracedSend(started.port, "otlp.env");
    await receiver.span("the SEND", (s) => s.service === "mq9-env" && s.name === "mq9 msg.send");
  });

  it("an endpoint that is not an http(s) URL is refused at start", async () => {
    const result = await runCli([
      "serve",
      "--otlp-endpoint",
      "localhost:4318",
      "--port",
      "0",
      "--http-port",
      "0",
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /telemetry\.otlpEndpoint: must be an http:\/\/ or https:\/\/ URL.*--otlp-endpoint/s,
    );
  });
});
