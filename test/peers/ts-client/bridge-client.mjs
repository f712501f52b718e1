// The TypeScript SDK's client (the v1 SDK that test/peers installs with
// server-everything) against `snodo bridge`: node bridge-client.mjs
// SNODO NATS_URL NAME [notifications]. It lists the tools, calls echo,
// calls slow with progress, and calls ask, answering each
// elicitation/create with a name; it prints one JSON line of what it saw
// and exits 0, or prints the error on stderr and exits 1. With
// notifications it instead has the served server send
// notifications/tools/list_changed (test/notify) and prints
// {"listChanged":true} once the notification arrived (10 s at most).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema, EmptyResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [snodo, url, name, mode] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: snodo, args: ["bridge", "--nats", url, "--server", name], stderr: "inherit" });
const client = new Client({ name: "bridge-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
let elicited = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  elicited++;
  return { action: "accept", content: { name: "ts" + elicited } };
});

try {
  await client.connect(transport);
  if (mode === "notifications") {
    const changed = new Promise((resolve, reject) => {
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true));
      setTimeout(() => reject(new Error("no notifications/tools/list_changed within 10 s")), 10000);
    });
    await client.request({ method: "test/notify", params: { method: "notifications/tools/list_changed" } }, EmptyResultSchema.passthrough());
    process.stdout.write(JSON.stringify({ listChanged: await changed }) + "\n");
    await client.close();
    process.exit(0);
  }
  const seen = { server: client.getServerVersion()?.name, tools: [] };
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    seen.tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  const echo = await client.callTool({ name: "echo", arguments: { message: "from TypeScript" } });
  seen.echo = echo.content[0].text;
  let progress = 0;
  await client.callTool({ name: "slow", arguments: { ms: 300 } }, undefined, { onprogress: () => progress++ });
  seen.progress = progress;
  const ask = await client.callTool({ name: "ask", arguments: { rounds: 2 } });
  seen.ask = ask.content[0].text;
  seen.elicited = elicited;
  process.stdout.write(JSON.stringify(seen) + "\n");
  await client.close();
  process.exit(0);
} catch (err) {
  process.stderr.write(`bridge-client: ${err?.stack ?? err}\n`);
  process.exit(1);
}
