// Entry of the worker thread on which `mq9 serve` runs its orchestrator (see orchestrator.ts).
// The orchestrator is a client of the broker like any other; on its own thread its routing no longer
// competes with the broker's event loop for one core.
import { parentPort, workerData } from "node:worker_threads";
import { connect } from "@mq9/client";
import { Orchestrator, type OrchestratorApi } from "@mq9/orchestrator";
import { toFailure } from "./failure-converter.js";
import {
  type FromWorker,
  ORCHESTRATOR_API,
  type OrchestratorWorkerData,
  type ToWorker,
} from "./orchestrator-calls.js";
import { CallDispatcher } from "./worker-calls.js";

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) return;
  const data = workerData as OrchestratorWorkerData;
  const post = (message: FromWorker) => port.postMessage(message);
  let orchestrator: Orchestrator;
  const client = await connect(data.server, data.connect).catch((err: unknown) => {
    post({ type: "failed", failure: toFailure(err) });
    return undefined;
  });
  if (!client) return;
  try {
    orchestrator = await Orchestrator.start({
      client,
      // Watched: a folder created after the start is picked up when it appears.
      templates: data.templates,
      ...data.settings,
      webhooks: data.webhooks,
      onError: (err) => post({ type: "warn", message: err.message }),
      log: (level, message, fields) => post({ type: "log", level, message, fields }),
    });
  } catch (err) {
    await client.close();
    post({ type: "failed", failure: toFailure(err) });
    return;
  }
  // The assignment is the check that the orchestrator implements the API the routes call.
  const api: OrchestratorApi = orchestrator;
  const calls = new CallDispatcher(api, ORCHESTRATOR_API, post);
  port.on("message", (message: ToWorker) => {
    if (message.type === "call") {
      calls.dispatch(message);
      return;
    }
    void orchestrator
      .close()
      .catch((err: Error) => post({ type: "warn", message: `shutdown: ${err.message}` }))
      .then(() => client.close())
      .finally(() => {
        post({ type: "closed" });
        port.close();
      });
  });
  post({ type: "ready", taskTypes: orchestrator.templates.names() });
}

void main();
