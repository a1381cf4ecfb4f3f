// GET /.well-known/oauth-protected-resource/mcp/{server} (RFC 9728; docs/identity.md "MCP
// clients"): the metadata an MCP client reads to find the identity provider. Part of the MCP
// front door's paths when auth.jwt names an issuer (mcp-front-door.ts), and only for servers
// in mcp_servers (and `/mcp`, the aggregated endpoint): any other name is 404, so the route
// tells nothing the config does not serve.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROTECTED_RESOURCE_PATH, type McpAuthorization } from '../auth/mcp-authorization.js';
import type { GatewayConfig } from '../config/schema.js';
import { GatewayError } from '../errors.js';
import { sendError } from './errors.js';
import { chooseRequestId } from './request-id.js';

const MCP_METADATA_PATH = `${PROTECTED_RESOURCE_PATH}/mcp`;
const MCP_METADATA_PREFIX = `${MCP_METADATA_PATH}/`;

/** Whether the request is for protected resource metadata (this route answers all of that prefix). */
export function isProtectedResourceRequest(url: string | undefined): boolean {
  return url !== undefined && url.startsWith(PROTECTED_RESOURCE_PATH);
}

export function answerProtectedResource(req: IncomingMessage, res: ServerResponse, config: GatewayConfig, authorization: McpAuthorization): void {
  const requestId = chooseRequestId(req.headers['x-request-id']);
  res.setHeader('X-Request-Id', requestId);
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  const server = path.startsWith(MCP_METADATA_PREFIX) ? path.slice(MCP_METADATA_PREFIX.length) : '';
  // The aggregated endpoint's, or a configured server's name only: the map's own lookup, never a name taken apart or decoded.
  const body = path === MCP_METADATA_PATH ? authorization.metadata(undefined) : config.mcpServers.has(server) ? authorization.metadata(server) : undefined;
  req.resume();
  if (body === undefined) {
    sendError(res, new GatewayError('not_found', { message: 'No such resource; the MCP servers of this gateway have their metadata at /.well-known/oauth-protected-resource/mcp/{server}.' }), requestId);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new GatewayError('method_not_allowed', { message: 'This route accepts GET, HEAD.', headers: { Allow: 'GET, HEAD' } }), requestId);
    return;
  }
  // Public and the same for everyone: cacheable, and readable by a browser-based MCP client.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' });
  res.end(req.method === 'HEAD' ? undefined : body);
}
