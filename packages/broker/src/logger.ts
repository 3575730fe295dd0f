export { type Logger, silentLogger } from "@mq9/protocol";
