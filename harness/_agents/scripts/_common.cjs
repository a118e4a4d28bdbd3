// Shared by the example Node agents: the task, the MCP tools, counting what crossed the wire.
// The harness sets TOOLCHAOS_MCP_URL and the SDKs' usual variables (OPENAI_BASE_URL, ...).
'use strict';
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const counts = { model_requests: 0, tool_calls: 0, tool_errors: 0, turns: 0, stopped: 'unknown' };

// Every HTTP request the SDK sends, retries included, is a model request the server sees.
function countingFetch(url, init) {
  counts.model_requests += 1;
  return fetch(url, init);
}

async function readTask() {
  const args = process.argv.slice(2);
  if (args.length > 0) return args[args.length - 1];
  if (process.env.TOOLCHAOS_TASK) return process.env.TOOLCHAOS_TASK;
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function connectTools() {
  const client = new Client({ name: 'toolchaos-example-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.TOOLCHAOS_MCP_URL)));
  const { tools } = await client.listTools();
  async function call(name, args) {
    counts.tool_calls += 1;
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) counts.tool_errors += 1;
    return (result.content || []).map((c) => (c.type === 'text' ? c.text : JSON.stringify(c))).join('\n');
  }
  return { client, tools, call };
}

function parseArgs(text) {
  try { return JSON.parse(text || '{}'); } catch (e) { return {}; }
}

// Printed last, one JSON line: what the agent's own code counted, for the harness to compare.
function report() {
  process.stdout.write(`TOOLCHAOS_COUNTS ${JSON.stringify(counts)}\n`);
}

const maxTurns = Number(process.env.AGENT_MAX_TURNS || 10);

module.exports = { counts, countingFetch, readTask, connectTools, parseArgs, report, maxTurns };
