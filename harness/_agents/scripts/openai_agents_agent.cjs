// An agent on the OpenAI Agents JS SDK (@openai/agents) at its defaults: its Runner, its MCP
// client (MCPServerStreamableHttp) for the harness's tools, its own max turns (10).
'use strict';
const OpenAI = require('openai');
const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient, setTracingDisabled } = require('@openai/agents');
const { counts, countingFetch, readTask, report } = require('./_common.cjs');

async function main() {
  const task = await readTask();
  setTracingDisabled(true);  // its traces would go to the OpenAI API
  setDefaultOpenAIClient(new OpenAI({ fetch: countingFetch }));  // OPENAI_BASE_URL, OPENAI_API_KEY
  const mcp = new MCPServerStreamableHttp({ url: process.env.TOOLCHAOS_MCP_URL, name: 'chaos' });
  await mcp.connect();
  const callTool = mcp.callTool.bind(mcp);
  mcp.callTool = async (...args) => {  // counted as the SDK calls them
    counts.tool_calls += 1;
    const result = await callTool(...args);
    if (result && result.isError) counts.tool_errors += 1;
    return result;
  };
  const agent = new Agent({ name: 'toolchaos-example', instructions: 'Do the task.', mcpServers: [mcp],
    model: process.env.TOOLCHAOS_MODEL || 'gpt-4o-mini' });
  try {
    const result = await run(agent, task);
    counts.turns = result.rawResponses.length;
    counts.stopped = 'final';
  } catch (err) {
    counts.stopped = err.constructor.name === 'MaxTurnsExceededError' ? 'turn_limit' : `error: ${err.message}`;
  } finally {
    await mcp.close();
  }
}

main().then(report, (err) => { counts.stopped = `error: ${err.message}`; report(); process.exitCode = 1; });
