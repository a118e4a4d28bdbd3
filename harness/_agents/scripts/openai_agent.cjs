// An agent loop on the openai package (Chat Completions), its tools from the harness's MCP server.
// Stops at the model's final answer or at its own turn limit (AGENT_MAX_TURNS, default 10).
'use strict';
const OpenAI = require('openai');
const { counts, countingFetch, readTask, connectTools, parseArgs, report, maxTurns } = require('./_common.cjs');

async function main() {
  const task = await readTask();
  const { client, tools, call } = await connectTools();
  const openai = new OpenAI({ fetch: countingFetch });  // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
  const specs = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description || '',
    parameters: t.inputSchema } }));
  const messages = [{ role: 'user', content: task }];
  counts.stopped = 'turn_limit';
  for (let turn = 0; turn < maxTurns; turn += 1) {
    counts.turns += 1;
    const res = await openai.chat.completions.create({ model: process.env.TOOLCHAOS_MODEL || 'gpt-4o-mini',
      messages, tools: specs });
    const msg = res.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls || msg.tool_calls.length === 0) { counts.stopped = 'final'; break; }
    for (const tc of msg.tool_calls) {
      const content = await call(tc.function.name, parseArgs(tc.function.arguments));
      messages.push({ role: 'tool', tool_call_id: tc.id, content });
    }
  }
  await client.close();
}

main().then(report, (err) => { counts.stopped = `error: ${err.message}`; report(); process.exitCode = 1; });
