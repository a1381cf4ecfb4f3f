// What a bench MCP client sends (bench/scenarios/mcp-calls.mjs, bench/count-instructions.mjs's
// `mcp` builds): one session opened per target before the measurement (initialize, then
// notifications/initialized), and the same small `tools/call` on it from then on.
import { MCP_PROTOCOL, MCP_TOOL } from '../reference/stub-mcp-server.mjs';

/** The server's name in the bench gateway's `mcp_servers` (the `mcp` variation, bench/lib/build-specs.mjs). */
export const MCP_SERVER = 'bench-tools';
/** The gateway's path for it. */
export const GATEWAY_MCP_PATH = `/mcp/${MCP_SERVER}`;
/** One `tools/call`, the body every measured request carries. */
export const TOOL_CALL_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: MCP_TOOL, arguments: { text: 'hello' } } });

const CLIENT_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/**
 * Opens a session at `url` + `path` (with `headers`: the key, for the gateway) and returns the
 * headers of every call on it. Throws when the target does not answer as an MCP server.
 */
export async function openMcpSession(url, path, headers = {}) {
  const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: MCP_PROTOCOL, capabilities: {}, clientInfo: { name: 'agentgw-bench', version: '1' } } };
  const opened = await fetch(`${url}${path}`, { method: 'POST', headers: { ...CLIENT_HEADERS, ...headers }, body: JSON.stringify(initialize) });
  const text = await opened.text();
  const session = opened.headers.get('mcp-session-id');
  if (opened.status !== 200 || session === null) throw new Error(`${url}${path}: initialize answered ${opened.status} ${text.slice(0, 300)}`);
  const callHeaders = { ...CLIENT_HEADERS, ...headers, 'mcp-session-id': session, 'mcp-protocol-version': MCP_PROTOCOL };
  const initialized = await fetch(`${url}${path}`, { method: 'POST', headers: callHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await initialized.arrayBuffer();
  if (initialized.status !== 202) throw new Error(`${url}${path}: notifications/initialized answered ${initialized.status}`);
  return callHeaders;
}

/** One call, checked: a target that answers wrongly fast is not a result. */
export async function checkToolCall(url, path, headers) {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: TOOL_CALL_BODY });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('"echo from the stub MCP server"') || !text.includes('"id":1')) throw new Error(`${url}${path}: tools/call answered ${res.status} ${text.slice(0, 300)}`);
}
