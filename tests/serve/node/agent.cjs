// A plain agent loop on the openai npm package, as a Node user writes one: streamed chat
// completions from OPENAI_BASE_URL, its tools over MCP (JSON-RPC to TOOLCHAOS_MCP_URL).
// It counts what it saw and prints the counts as one JSON line when it stops: at a final
// answer, or when the API refuses it (the harness's ceiling). CommonJS, so that NODE_PATH finds
// the pinned packages (.ci/node/node_modules).
const OpenAI = require("openai");

const client = new OpenAI({ maxRetries: 0 });
const mcpUrl = process.env.TOOLCHAOS_MCP_URL;
const counts = { answers: 0, tool_calls: 0, errors: 0, refused: null, final: null };

async function mcp(method, params) {
  const r = await fetch(mcpUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await r.json()).result;
}

async function main() {
  const listed = await mcp("tools/list", {});
  const tools = listed.tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
  const messages = [{ role: "user", content: process.argv[2] ?? "Get the invoice total" }];

  for (let turn = 0; turn < 50; turn++) {
    let stream;
    try {
      stream = await client.chat.completions.create({ model: "gpt-test", messages, tools, stream: true });
    } catch (err) {
      counts.refused = `${err.status}: ${err.message}`;
      break;
    }
    const calls = [];
    let text = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta ?? {};
      text += delta.content ?? "";
      for (const tc of delta.tool_calls ?? []) {
        calls[tc.index] ??= { id: "", name: "", args: "" };
        calls[tc.index].id = tc.id ?? calls[tc.index].id;
        calls[tc.index].name = tc.function?.name ?? calls[tc.index].name;
        calls[tc.index].args += tc.function?.arguments ?? "";
      }
    }
    counts.answers++;
    messages.push({
      role: "assistant",
      content: text || null,
      ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } })) } : {}),
    });
    if (!calls.length) {
      counts.final = text;
      break;
    }
    for (const c of calls) {
      const result = await mcp("tools/call", { name: c.name, arguments: JSON.parse(c.args || "{}") });
      counts.tool_calls++;
      if (result.isError) counts.errors++;
      messages.push({ role: "tool", tool_call_id: c.id, content: result.content[0].text });
    }
  }
  console.log(JSON.stringify(counts));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
