// An agent loop on @anthropic-ai/sdk (Messages), its tools from the harness's MCP server.
// Stops at the model's final answer or at its own turn limit (AGENT_MAX_TURNS, default 10).
'use strict';
const Anthropic = require('@anthropic-ai/sdk');
const { counts, countingFetch, readTask, connectTools, report, maxTurns } = require('./_common.cjs');

async function main() {
  const task = await readTask();
  const { client, tools, call } = await connectTools();
  const anthropic = new Anthropic({ fetch: countingFetch });  // ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
  const specs = tools.map((t) => ({ name: t.name, description: t.description || '', input_schema: t.inputSchema }));
  const messages = [{ role: 'user', content: task }];
  counts.stopped = 'turn_limit';
  for (let turn = 0; turn < maxTurns; turn += 1) {
    counts.turns += 1;
    const res = await anthropic.messages.create({ model: process.env.TOOLCHAOS_MODEL || 'claude-sonnet-4-5',
      max_tokens: 1024, messages, tools: specs });
    messages.push({ role: 'assistant', content: res.content });
    const uses = res.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) { counts.stopped = 'final'; break; }
    const results = [];
    for (const use of uses) {
      results.push({ type: 'tool_result', tool_use_id: use.id, content: await call(use.name, use.input || {}) });
    }
    messages.push({ role: 'user', content: results });
  }
  await client.close();
}

main().then(report, (err) => { counts.stopped = `error: ${err.message}`; report(); process.exitCode = 1; });
