import type { Command } from "commander";
import { SETTINGS } from "../serve/settings/serve-settings.js";
import { flagSyntax, helpLine } from "../serve/settings/setting-text.js";

/** `mq9 serve`: one flag per setting; the broker and its apps load only when it runs. */
export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("run the mq9 broker (embedded NATS-protocol listener + SQLite store)")
    .option("-c, --config <file>", "JSON config file (env MQ9_CONFIG); env MQ9_* and flags override it");
  for (const setting of SETTINGS) {
    if (setting.flag !== undefined) command.option(flagSyntax(setting), helpLine(setting));
  }
  command
    .addHelpText(
      "after",
      `
Examples:
  mq9 serve                                 # 127.0.0.1:4332, data in ./mq9-data
  mq9 serve --host 0.0.0.0 --port 4332 --data /var/lib/mq9 --sync full
  MQ9_TOKEN=s3cret mq9 serve --log-format json
  mq9 serve --config mq9.json               # auth.users: users, permissions, isolation (docs/security.md)
  mq9 serve --tls-cert cert.pem --tls-key key.pem   # clients use tls:// or mq9s://`,
    )
    .action(async (options: Record<string, unknown>) => {
      const { serve } = await import("../serve/run-serve.js");
      await serve(options);
    });
}
