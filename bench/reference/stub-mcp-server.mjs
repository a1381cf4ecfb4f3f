// The MCP server the bench's MCP scenario (bench/scenarios/mcp-calls.mjs) and
// bench/count-instructions.mjs's `mcp` builds talk to: Streamable HTTP, answers as JSON, one
// tool (`echo`), as fast as node:http allows, so the numbers measure what is in front of it.
// A session: `initialize` is answered with an Mcp-Session-Id the client sends from then on
// (the driver initializes once and reuses it); any id is accepted after that, since the
// gateway in front holds the map and the stub must stay cheap.
//
//   node bench/reference/stub-mcp-server.mjs [--port 0] [--host 127.0.0.1]   prints `listening <port>`
//
// POST /mcp  initialize → the server's capabilities; notifications → 202; tools/list → `echo`;
//            tools/call → a fixed text result carrying the request's id; anything else → -32601.
// DELETE /mcp → 200; GET /mcp → 405 (no server-to-client stream).
import http from 'node:http';
import { closeServer, isMainModule, listen, readOption } from './cli-args.mjs';

export const MCP_PATH = '/mcp';
export const MCP_TOOL = 'echo';
export const MCP_PROTOCOL = '2025-06-18';
const SESSION_ID = 'bench-stub-session';

const JSON_HEADERS = { 'content-type': 'application/json' };
const INITIALIZE_RESULT = JSON.stringify({ protocolVersion: MCP_PROTOCOL, capabilities: { tools: {} }, serverInfo: { name: 'bench-stub-mcp', version: '1.0.0' } });
const TOOLS_LIST_RESULT = JSON.stringify({ tools: [{ name: MCP_TOOL, description: 'Answers a fixed text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] });
const CALL_RESULT = JSON.stringify({ content: [{ type: 'text', text: 'echo from the stub MCP server' }], isError: false });

/** A JSON-RPC result carrying the request's id, the result's JSON built once at load. */
function answer(res, id, resultJson, extraHeaders) {
  const body = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`;
  res.writeHead(200, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body), ...extraHeaders });
  res.end(body);
}

function handlePost(req, res, text) {
  let message;
  try {
    message = JSON.parse(text);
  } catch {
    res.writeHead(400, JSON_HEADERS).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    return;
  }
  if (message.id === undefined) {
    // A notification (notifications/initialized, cancelled) or a response: accepted, no body.
    res.writeHead(202).end();
    return;
  }
  if (message.method === 'tools/call') answer(res, message.id, CALL_RESULT);
  else if (message.method === 'initialize') answer(res, message.id, INITIALIZE_RESULT, { 'mcp-session-id': SESSION_ID });
  else if (message.method === 'tools/list') answer(res, message.id, TOOLS_LIST_RESULT);
  else if (message.method === 'ping') answer(res, message.id, '{}');
  else {
    const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `Method not found: ${String(message.method)}` } });
    res.writeHead(200, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body) }).end(body);
  }
}

export async function startStubMcpServer({ port = 0, host = '127.0.0.1' } = {}) {
  const server = http.createServer((req, res) => {
    if (req.url !== MCP_PATH) {
      res.writeHead(404).end();
      return;
    }
    if (req.method === 'DELETE') {
      res.writeHead(200, { 'content-length': '0' }).end();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.once('end', () => handlePost(req, res, chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')));
  });
  const bound = await listen(server, port, host);
  return { port: bound, url: `http://${host}:${bound}${MCP_PATH}`, close: () => closeServer(server) };
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const stub = await startStubMcpServer({ port: Number(readOption(argv, 'port', 'PORT', '0')), host: readOption(argv, 'host', 'HOST', '127.0.0.1') });
  process.stdout.write(`listening ${stub.port}\n`);
  const stop = () => stub.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
