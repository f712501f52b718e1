// The TypeScript SDK's client (the v1 SDK that test/peers installs with
// server-everything) against snodo's gateway over Streamable HTTP:
// node gateway-client.mjs URL; or over stdio, against a command such as
// `snodo bridge`: node gateway-client.mjs --stdio CMD ARGS... In front of server-everything it lists the
// tools, runs trigger-long-running-operation with progress, answers the
// server's sampling and elicitation requests with its own handlers, sets
// the log level and turns the simulated logs on, subscribes to a resource
// and turns its updates on; it prints one JSON line of what it saw (any
// error the SDK raised, such as a progress notification for an unknown
// token, in "errors") and exits 0, or prints the error on stderr and
// exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, ...rest] = process.argv.slice(2);
// GATEWAY_CLIENT_SKIP: comma-separated steps left out ("sampling", "logs").
const skip = new Set((process.env.GATEWAY_CLIENT_SKIP ?? "").split(",").filter(Boolean));
const transport = url === "--stdio"
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "gateway-test", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } });
const seen = { errors: [], sampled: 0, elicited: 0, logs: 0, updates: 0 };
client.onerror = (err) => seen.errors.push(String(err?.message ?? err));
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  seen.sampled++;
  return { model: "ts-handler", role: "assistant", content: { type: "text", text: "sampled by the TypeScript client" } };
});
client.setRequestHandler(ElicitRequestSchema, async () => {
  seen.elicited++;
  return { action: "decline" };
});
const until = (what, cond) => new Promise((resolve, reject) => {
  const t0 = Date.now();
  const tick = () => {
    if (cond()) return resolve();
    if (Date.now() - t0 > 15000) return reject(new Error(`no ${what} within 15 s`));
    setTimeout(tick, 50);
  };
  tick();
});

try {
  await client.connect(transport);
  seen.server = client.getServerVersion()?.name;
  seen.tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    seen.tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);

  let progress = 0;
  const long = await client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 0.5, steps: 5 } },
    undefined, { onprogress: () => progress++ });
  seen.progress = progress;
  seen.long = long.content[0].text;

  if (!skip.has("sampling")) {
    const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hello" } });
    seen.sampling = JSON.stringify(sampled.content);
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    seen.elicitation = JSON.stringify(elicited.content);
  }

  if (!skip.has("logs")) {
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => seen.logs++);
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await until("log message", () => seen.logs > 0);
  }

  client.setNotificationHandler(ResourceUpdatedNotificationSchema, () => seen.updates++);
  const resources = await client.listResources();
  await client.subscribeResource({ uri: resources.resources[0].uri });
  await client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
  await until("resource update", () => seen.updates > 0);

  await new Promise((r) => setTimeout(r, 200)); // a late progress notification would show in errors
  process.stdout.write(JSON.stringify(seen) + "\n");
  await client.close();
  process.exit(0);
} catch (err) {
  process.stderr.write(`gateway-client: ${err?.stack ?? err} ${JSON.stringify(seen)}\n`);
  process.exit(1);
}
