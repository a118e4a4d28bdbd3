// An agent on the Vercel AI SDK (ai with @ai-sdk/openai) as its docs use it: generateText with tools and a
// step limit (stopWhen: stepCountIs(AGENT_MAX_TURNS), default 10). The SDK has no MCP client of its own any
// more, so each of the harness's MCP tools becomes an ai tool() whose execute calls it over the MCP client.
'use strict';
const { generateText, jsonSchema, stepCountIs, tool } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const { counts, countingFetch, readTask, connectTools, report, maxTurns } = require('./_common.cjs');

function aiTools(tools, call) {
  return Object.fromEntries(tools.map((t) => [t.name, tool({
    description: t.description || '', inputSchema: jsonSchema(t.inputSchema), execute: (args) => call(t.name, args),
  })]));
}

async function main() {
  const task = await readTask();
  const { client, tools, call } = await connectTools();
  // Its default model for openai(...) is the Responses API.
  const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY,
    fetch: countingFetch });
  try {
    const result = await generateText({ model: openai(process.env.TOOLCHAOS_MODEL || 'gpt-4o-mini'), prompt: task,
      tools: aiTools(tools, call), stopWhen: stepCountIs(maxTurns) });
    counts.turns = result.steps.length;
    // It stops without an error at the step limit; the last step then ended in tool calls, not an answer.
    counts.stopped = result.finishReason === 'tool-calls' ? 'turn_limit' : 'final';
  } finally {
    await client.close();
  }
}

main().then(report, (err) => { counts.stopped = `error: ${err.message}`; report(); process.exitCode = 1; });
