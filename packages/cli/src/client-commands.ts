import type { Command } from "commander";
import { registerAck } from "./ack-command.js";
import { registerAgent } from "./agent-command.js";
import { registerConsume } from "./consume-command.js";
import { registerDelete } from "./delete-command.js";
import { registerFetch } from "./fetch-command.js";
import { registerMailbox } from "./mailbox-command.js";
import { registerQuery } from "./query-command.js";
import { registerSend } from "./send-command.js";

/** Every command that talks to a broker through the client SDK. */
export function registerClientCommands(program: Command): void {
  registerMailbox(program);
  registerSend(program);
  registerFetch(program);
  registerAck(program);
  registerQuery(program);
  registerDelete(program);
  registerConsume(program);
  registerAgent(program);
}
