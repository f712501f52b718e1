// A modern-only (2026-07-28) MCP server written with the TypeScript SDK v2,
// served over stdio. snodo's peers_test.go runs it with node; install its
// dependencies with `bash test/peers/install.sh`.
//
// Tools:
//   greet {name}        text "Hello, <name>!"
//   count {steps}       one notifications/progress per step, then "counted <steps>"
//   ask_name            input_required: elicits {name}, answers "Hello, <name>!"
//   ask_model           input_required: samples a message, answers "model said: <text>"
//   add_tool            registers one more tool, so subscribers see tools/list_changed
import { McpServer, acceptedContent, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

function build() {
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

  let added = 0;
  server.registerTool('add_tool', { description: 'Adds a tool (tools/list_changed).' }, async () => {
    added++;
    server.registerTool(`extra_${added}`, { description: 'Added at run time.' }, async () => ({
      content: [{ type: 'text', text: 'extra' }],
    }));
    return { content: [{ type: 'text', text: `added extra_${added}` }] };
  });

  return server;
}

serveStdio(build, { legacy: 'reject' });
