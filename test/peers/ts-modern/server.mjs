// An MCP server written with the TypeScript SDK v2. On stdio (no
// arguments) it is modern-only (2026-07-28); snodo's peers_test.go runs it
// with node. With `--http HOST:PORT` it serves Streamable HTTP on /mcp in
// both eras: modern requests through the SDK's createMcpHandler (stateless
// POSTs, subscriptions/listen streams), legacy ones (initialize, then
// Mcp-Session-Id) through a WebStandardStreamableHTTPServerTransport per
// session; a session the server does not know is answered 404.
// Install its dependencies with `bash test/peers/install.sh`.
//
// Tools:
//   greet {name}        text "Hello, <name>!"
//   count {steps}       one notifications/progress per step, then "counted <steps>"
//   ask_name            input_required: elicits {name}, answers "Hello, <name>!"
//   ask_model           input_required: samples a message, answers "model said: <text>"
//   add_tool            registers one more tool, so subscribers see tools/list_changed
//   wait                reports progress once, then blocks until the call is cancelled (or 60 s)
//   cancelled           how many wait calls ended by cancellation: "cancelled <n>"
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import {
  McpServer, WebStandardStreamableHTTPServerTransport, acceptedContent, createMcpHandler, inputRequired,
  inputResponse, isLegacyRequest,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

// State shared by every instance: over HTTP each modern request gets an
// instance of its own.
let added = 0;
let cancelled = 0;
let toolsChanged = null; // set over HTTP: tells the modern listen streams

function build(ctx) {
  const perRequest = ctx?.era === 'modern' && toolsChanged !== null;
  const server = new McpServer(
    { name: 'snodo-ts-modern', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } }, instructions: 'modern-only test peer' }
  );

  server.registerTool('greet', {
    description: 'Greets someone.',
    inputSchema: z.object({ name: z.string() }),
  }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));

  server.registerTool('count', {
    description: 'Reports progress once per step.',
    inputSchema: z.object({ steps: z.number() }),
  }, async ({ steps }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
        });
      }
    }
    return { content: [{ type: 'text', text: `counted ${steps}` }] };
  });

  server.registerTool('ask_name', { description: 'Asks the user for a name.' }, async (ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name');
    if (typeof answer?.name === 'string' && ctx.mcpReq.requestState() === 'asked-name') {
      return { content: [{ type: 'text', text: `Hello, ${answer.name}!` }] };
    }
    return inputRequired({
      inputRequests: {
        name: inputRequired.elicit({
          message: 'What is your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        }),
      },
      requestState: 'asked-name',
    });
  });

  server.registerTool('ask_model', { description: 'Asks the client model a question.' }, async (ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'question');
    if (view.kind === 'sampling') {
      const content = view.result.content;
      const block = Array.isArray(content) ? content[0] : content;
      return { content: [{ type: 'text', text: `model said: ${block?.text ?? '?'}` }] };
    }
    return inputRequired({
      inputRequests: {
        question: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }],
          maxTokens: 10,
        }),
      },
    });
  });

  const extra = (n) => server.registerTool(`extra_${n}`, { description: 'Added at run time.' }, async () => ({
    content: [{ type: 'text', text: 'extra' }],
  }));
  for (let n = 1; n <= added; n++) extra(n);
  server.registerTool('add_tool', { description: 'Adds a tool (tools/list_changed).' }, async () => {
    added++;
    if (perRequest) {
      toolsChanged(); // the next instances have it; the listen streams hear of it
    } else {
      extra(added); // this connection's instance tells its client
    }
    return { content: [{ type: 'text', text: `added extra_${added}` }] };
  });

  server.registerTool('wait', { description: 'Blocks until cancelled (at most 60 s).' }, async (ctx) => {
    const signal = ctx.mcpReq.signal;
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) {
      await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: 0, message: 'waiting' } });
    }
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 60_000);
      signal.addEventListener('abort', () => { clearTimeout(timer); cancelled++; resolve(); }, { once: true });
    });
    return { content: [{ type: 'text', text: signal.aborted ? 'cancelled' : 'waited 60 s' }] };
  });
  server.registerTool('cancelled', { description: 'Counts the wait calls ended by cancellation.' }, async () => ({
    content: [{ type: 'text', text: `cancelled ${cancelled}` }],
  }));

  return server;
}

// serveHTTP serves both eras on /mcp at addr (HOST:PORT).
function serveHTTP(addr) {
  const modern = createMcpHandler(build, { legacy: 'reject' });
  toolsChanged = () => modern.notify.toolsChanged();
  const sessions = new Map(); // Mcp-Session-Id → transport

  async function legacy(request, body) {
    const sid = request.headers.get('mcp-session-id');
    if (sid) {
      const transport = sessions.get(sid);
      if (!transport) return new Response('no such session', { status: 404 });
      return transport.handleRequest(request);
    }
    if (request.method !== 'POST' || body?.method !== 'initialize') {
      return new Response('Bad Request: no session', { status: 400 });
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { sessions.set(id, transport); },
      onsessionclosed: (id) => { sessions.delete(id); },
    });
    await build({ era: 'legacy' }).connect(transport);
    return transport.handleRequest(request);
  }

  async function fetch(request) {
    if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
    let body;
    if (request.method === 'POST') {
      try { body = await request.clone().json(); } catch { body = undefined; }
    }
    if (await isLegacyRequest(request)) return legacy(request, body);
    return modern.fetch(request);
  }

  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
  const server = http.createServer(async (req, res) => {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    try {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = Buffer.concat(chunks);
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]])),
        body: body.length > 0 ? body : undefined,
        signal: abort.signal,
      });
      const response = await fetch(request);
      const headers = {};
      response.headers.forEach((v, k) => { headers[k] = v; });
      res.writeHead(response.status, headers);
      res.flushHeaders(); // an SSE stream's headers go now, not with its first event
      if (response.body) {
        const reader = response.body.getReader();
        res.on('close', () => { reader.cancel().catch(() => {}); });
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          res.write(value);
        }
      }
      res.end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  });
  server.listen(port, host);
  const stop = () => { server.close(); server.closeAllConnections(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const i = process.argv.indexOf('--http');
if (i >= 0) {
  serveHTTP(process.argv[i + 1]);
} else {
  serveStdio(build, { legacy: 'reject' });
}
